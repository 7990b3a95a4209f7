/**
 * The JavaScript that runs inside the sandbox's context before a tool does. It is a function expression:
 * called once with the host object (`now`, `clock`, `random`, `id`, `load`, `fail`), it returns
 * `drive(source, input)`, which compiles the tool's source, calls it with `ctx`, and answers with ONE string
 * (or a promise of one) describing what happened. The host never reads guest objects, only that string
 * (and `drive.usage()`, the count of values the call took).
 *
 * Everything the driver relies on is captured before the tool's code is evaluated, so a tool that replaces
 * globals (JSON, Reflect, Promise, Date, Proxy, String.prototype) cannot change how its input and result
 * are read. Date and Math.random read the environment's seeded clock and random source (values drawn ahead
 * come with the input as tapes), so a seeded run repeats exactly. A change a tool makes to
 * Object.prototype (prototype pollution) is detected and fails the call; the engine writes its memory
 * snapshot back after every call anyway (snapshot.ts), so nothing a tool changes in its globals reaches
 * another call.
 *
 * Input: a line of tapes, a newline, then the JSON `{state, args}`, or `{root, args}` for a lazy draft of the
 * state (see below), whose answer lists the changes instead of the whole state. The tape line is empty or
 * the JSON `[clock readings, random numbers, ids]`, read when the call first takes a value; ctx.now()
 * shows a clock reading as its ISO text. An input without a newline has no tapes.
 * Answer: a synchronous one starts with the values the call took, `<clock>,<random>,<ids>;`, then the
 * report (a promise's report comes alone; the engine then asks usage()).
 * Reports: {kind: "returned", observation, state} | {kind: "returned", observation, changes}
 * | {kind: "raised", message} | {kind: "compile", message} | {kind: "not-a-function", type}
 * | {kind: "unserializable", message} | {kind: "tampered", target, key} | {kind: "memory"}.
 */
export const GUEST_PRELUDE = String.raw`(function (host) {
  "use strict";
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const globalEval = eval;
  const apply = Reflect.apply;
  const construct = Reflect.construct;
  const ownKeys = Reflect.ownKeys;
  const describeProperty = Reflect.getOwnPropertyDescriptor;
  const prototypeOf = Reflect.getPrototypeOf;
  const same = Object.is;
  const toText = String;
  const SandboxPromise = Promise;
  const CompileError = SyntaxError;
  const EngineError = InternalError;
  const HostDate = Date;
  const isoText = HostDate.prototype.toISOString;
  const textIndexOf = String.prototype.indexOf;
  const textSlice = String.prototype.slice;
  const createObject = Object.create;
  // Reflect.apply's argument lists, made once (the engine reads only their length and elements).
  const NO_ARGUMENTS = [];
  const NEWLINE = ["\n"];

  // Values the host drew ahead for this call (sources.ts), taken in order before the host is asked. They
  // come as JSON text, read the first time the call takes a value.
  const NONE = [];
  let tapeText = "";
  let tapeClock = NONE;
  let tapeRandom = NONE;
  let tapeIds = NONE;
  let usedClock = 0;
  let usedRandom = 0;
  let usedIds = 0;
  function readTapes() {
    const tapes = parse(tapeText);
    tapeText = "";
    tapeClock = tapes[0];
    tapeRandom = tapes[1];
    tapeIds = tapes[2];
  }
  function reading() {
    if (tapeText !== "") readTapes();
    const index = usedClock++;
    return index < tapeClock.length ? tapeClock[index] : host.clock();
  }
  function nowText() {
    if (tapeText !== "") readTapes();
    const index = usedClock++;
    return index < tapeClock.length ? apply(isoText, new HostDate(tapeClock[index]), NO_ARGUMENTS) : host.now();
  }
  function randomNumber() {
    if (tapeText !== "") readTapes();
    const index = usedRandom++;
    return index < tapeRandom.length ? tapeRandom[index] : host.random();
  }
  function freshId(prefix) {
    if (tapeText !== "") readTapes();
    const index = usedIds++;
    if (index < tapeIds.length) return prefix ? prefix + "_" + tapeIds[index] : tapeIds[index];
    return prefix === undefined ? host.id() : host.id(prefix);
  }
  function usage() {
    return usedClock + "," + usedRandom + "," + usedIds;
  }

  Math.random = function random() {
    return randomNumber();
  };
  const SeededDate = function Date(...parts) {
    if (new.target === undefined) return toText(new HostDate(reading()));
    return parts.length === 0
      ? construct(HostDate, [reading()], new.target)
      : construct(HostDate, parts, new.target);
  };
  SeededDate.prototype = HostDate.prototype;
  SeededDate.now = function now() {
    return reading();
  };
  SeededDate.parse = HostDate.parse;
  SeededDate.UTC = HostDate.UTC;
  HostDate.prototype.constructor = SeededDate;
  globalThis.Date = SeededDate;

  // Object.prototype, which every object inherits from, is recorded now and compared after the call. Its
  // own properties are made non-configurable first, so that a tool cannot delete them, hide them or turn
  // them into accessors (it gets a TypeError); what can still change (a value, a property made read-only,
  // a new key) is checked quickly after every call, and key by key to name what changed.
  const ObjectPrototype = Object.prototype;
  const reflectDefine = Reflect.defineProperty;
  const FIXED = createObject(null);
  FIXED.configurable = false;
  const prototypeKeys = ownKeys(ObjectPrototype);
  for (let i = 0; i < prototypeKeys.length; i++) reflectDefine(ObjectPrototype, prototypeKeys[i], FIXED);
  function record(target) {
    const keys = ownKeys(target);
    const slots = [];
    for (let i = 0; i < keys.length; i++) slots[i] = describeProperty(target, keys[i]);
    return { proto: prototypeOf(target), keys: keys, slots: slots };
  }
  function showKey(key) {
    return typeof key === "symbol" ? toText(key) : '"' + key + '"';
  }
  function changedKey(target, before) {
    if (prototypeOf(target) !== before.proto) return "its prototype";
    const keys = ownKeys(target);
    const count = keys.length > before.keys.length ? keys.length : before.keys.length;
    for (let i = 0; i < count; i++) {
      if (i >= keys.length) return showKey(before.keys[i]);
      if (i >= before.keys.length || !same(keys[i], before.keys[i])) return showKey(keys[i]);
      const now = describeProperty(target, keys[i]);
      const was = before.slots[i];
      if (
        !same(now.value, was.value) ||
        !same(now.get, was.get) ||
        !same(now.set, was.set) ||
        now.writable !== was.writable ||
        now.enumerable !== was.enumerable ||
        now.configurable !== was.configurable
      ) {
        return showKey(keys[i]);
      }
    }
    return undefined;
  }
  const baseline = record(ObjectPrototype);
  // The data properties (all but __proto__'s accessor, which can no longer change) and their values.
  const dataKeys = [];
  const dataValues = [];
  for (let i = 0; i < baseline.keys.length; i++) {
    const slot = baseline.slots[i];
    if ("value" in slot) {
      dataKeys[dataKeys.length] = baseline.keys[i];
      dataValues[dataValues.length] = slot.value;
    }
  }
  /** The changed key of Object.prototype as the report shows it, or undefined when it is as recorded. */
  function tampered() {
    // No key can go, so the same count means the same keys; a data property keeps being one, so reading
    // it runs nothing; writing its own value back is refused only when it was made read-only. Every
    // recorded value is a function, so !== finds exactly the changes Object.is would.
    if (ownKeys(ObjectPrototype).length === baseline.keys.length) {
      let i = 0;
      for (; i < dataKeys.length; i++) {
        const key = dataKeys[i];
        const value = ObjectPrototype[key];
        if (value !== dataValues[i]) break;
        try {
          ObjectPrototype[key] = value;
        } catch (readOnly) {
          break;
        }
      }
      if (i === dataKeys.length) return undefined;
    }
    return changedKey(ObjectPrototype, baseline);
  }

  function describe(problem) {
    try {
      if (problem !== null && (typeof problem === "object" || typeof problem === "function")) {
        const message = problem.message;
        const name = problem.name;
        if (typeof message === "string") {
          return typeof name === "string" && name !== "" ? name + ": " + message : message;
        }
      }
      return toText(problem);
    } catch (unshowable) {
      return "a value that cannot be shown";
    }
  }
  function report(result) {
    try {
      return stringify(result);
    } catch (problem) {
      if (problem instanceof EngineError && problem.message === "out of memory") return '{"kind":"memory"}';
      return stringify({ kind: "unserializable", message: describe(problem) });
    }
  }
  function raised(problem) {
    if (problem instanceof EngineError && problem.message === "out of memory") return '{"kind":"memory"}';
    return report({ kind: "raised", message: describe(problem) });
  }


  // The state as a lazy draft: a proxy per object the tool reaches, filled from the host (host.load) the
  // first time it is read, never for writes alone; arrays come whole on first use. What the tool changed
  // leaves as a list of changes: [0, path, value] sets, [1, path] deletes (see emit).
  //
  // A node is its proxy's handler: the traps are methods of its prototype (TRAPS, which inherits nothing),
  // so a node costs one object, and no trap is ever looked up on Object.prototype. Only the objects the
  // tool wrote, and their parents, are marked (touched), and only those are visited when the changes are
  // listed.
  const ProxyClass = Proxy;
  const reflectGet = Reflect.get;
  const reflectSet = Reflect.set;
  const reflectHas = Reflect.has;
  const reflectDelete = Reflect.deleteProperty;
  const reflectPrevent = Reflect.preventExtensions;
  const reflectSetPrototype = Reflect.setPrototypeOf;
  // A part of the state not yet read: its id at the host and whether it is an array. It inherits nothing,
  // so making one runs no setter a tool may have put on Object.prototype.
  const LazyPrototype = createObject(null);
  function lazy(id, array) {
    const value = createObject(LazyPrototype);
    value.id = id;
    value.array = array;
    return value;
  }
  const DELETED = createObject(null);
  let fullState = false;

  function dataSlot(value) {
    return { value: value, writable: true, enumerable: true, configurable: true };
  }
  function isLazy(value) {
    return value !== null && typeof value === "object" && prototypeOf(value) === LazyPrototype;
  }
  const TRAPS = createObject(null);
  // A node's fields: id, parent and key (where it is in the state), target and proxy; and, once they
  // apply: loaded, touched, whole, shuffled (true); pathText; baseKeys; pending, pendingKeys (writes
  // before loading: by key, in the order first made, DELETED for deletes); written (keys written or
  // deleted after loading); children, arrays (what its slots revealed). A field not set reads as undefined
  // from TRAPS, which inherits nothing.
  function makeNode(id, parent, key, entries) {
    const node = createObject(TRAPS);
    node.id = id;
    node.parent = parent;
    node.key = key;
    const target = {};
    node.target = target;
    node.proxy = new ProxyClass(target, node);
    if (entries !== undefined) fill(node, entries);
    return node;
  }
  /** Whether a key may be an array index, which objects list before their other keys, wherever added. */
  function mayBeIndex(key) {
    const first = key[0];
    return first >= "0" && first <= "9";
  }
  /** Marks a node as written, and its parents as leading to a write. */
  function touch(node) {
    while (node !== undefined && !node.touched) {
      node.touched = true;
      node = node.parent;
    }
  }
  function writtenOf(node) {
    if (node.written === undefined) node.written = createObject(null);
    return node.written;
  }
  function fill(node, entries) {
    const target = node.target;
    const pending = node.pending;
    const baseKeys = [];
    // Entries come flat, three items each: key, kind (0 a value, 1 an object, 2 an array), value or id.
    for (let i = 0; i + 2 < entries.length; i += 3) {
      const key = entries[i];
      const kind = entries[i + 1];
      baseKeys[baseKeys.length] = key;
      let value = kind === 0 ? entries[i + 2] : lazy(entries[i + 2], kind === 2);
      if (pending !== undefined && key in pending) {
        value = pending[key];
        if (value === DELETED) continue;
      }
      // A fresh object with Object.prototype's keys only: plain assignment defines a key that no setter or
      // read-only slot up the chain has a say in.
      if (key in ObjectPrototype) reflectDefine(target, key, dataSlot(value));
      else target[key] = value;
    }
    node.baseKeys = baseKeys;
    const keys = node.pendingKeys;
    if (keys !== undefined) {
      node.shuffled = true;
      const written = writtenOf(node);
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i];
        const value = pending[key];
        if (value !== DELETED && describeProperty(target, key) === undefined) {
          reflectDefine(target, key, dataSlot(value));
        }
        written[key] = true;
      }
    }
    node.loaded = true;
  }
  function load(node) {
    if (!node.loaded) fill(node, parse(host.load(node.id)));
  }
  /** What a slot holds, with a child not yet reached turned into its draft (or its array). */
  function reveal(node, key, value) {
    let revealed;
    if (value.array) {
      revealed = parse(host.load(value.id));
      if (node.arrays === undefined) node.arrays = createObject(null);
      node.arrays[key] = revealed;
      // An array's own changes are not seen: it goes back whole (the host keeps it when equal).
      touch(node);
    } else {
      const child = makeNode(value.id, node, key, undefined);
      if (node.children === undefined) node.children = createObject(null);
      node.children[key] = child;
      revealed = child.proxy;
    }
    reflectDefine(node.target, key, dataSlot(revealed));
    return revealed;
  }
  TRAPS.get = function (target, key, receiver) {
    const node = this;
    if (!node.loaded) load(node);
    // A part not yet reached can only be an own data slot of this target (no tool can hold one).
    const value = reflectGet(target, key, receiver);
    return isLazy(value) ? reveal(node, key, value) : value;
  };
  TRAPS.getOwnPropertyDescriptor = function (target, key) {
    const node = this;
    if (!node.loaded) load(node);
    const slot = describeProperty(target, key);
    if (slot !== undefined && "value" in slot && isLazy(slot.value)) {
      reveal(node, key, slot.value);
      return describeProperty(target, key);
    }
    return slot;
  };
  TRAPS.set = function (target, key, value, receiver) {
    const node = this;
    // A plain write to this draft with a key nothing up the prototype chain has a say in (a setter such
    // as __proto__'s, or a read-only property) sets the key here, without reading it.
    if (receiver === node.proxy && typeof key === "string" && !node.whole && !reflectHas(ObjectPrototype, key)) {
      if (!node.loaded) {
        // A write alone needs nothing from the host (a key deleted before is read first: it moves).
        if (node.pending === undefined) {
          node.pending = createObject(null);
          node.pendingKeys = [];
        }
        const pending = node.pending;
        if (pending[key] !== DELETED) {
          if (!(key in pending)) node.pendingKeys[node.pendingKeys.length] = key;
          pending[key] = value;
          if (key === "toJSON") fullState = true;
          touch(node);
          return true;
        }
        load(node);
      }
      if (!reflectSet(target, key, value)) return false;
      writtenOf(node)[key] = true;
      if (mayBeIndex(key)) node.shuffled = true;
      if (key === "toJSON") fullState = true;
      touch(node);
      return true;
    }
    if (!node.loaded) load(node);
    return reflectSet(target, key, value, receiver);
  };
  TRAPS.deleteProperty = function (target, key) {
    const node = this;
    if (!node.loaded && typeof key === "string") {
      if (node.pending === undefined) {
        node.pending = createObject(null);
        node.pendingKeys = [];
      }
      if (!(key in node.pending)) node.pendingKeys[node.pendingKeys.length] = key;
      node.pending[key] = DELETED;
      touch(node);
      return true;
    }
    if (!node.loaded) load(node);
    const done = reflectDelete(target, key);
    if (typeof key === "string") {
      writtenOf(node)[key] = true;
      node.shuffled = true;
      touch(node);
    }
    return done;
  };
  TRAPS.defineProperty = function (target, key, slot) {
    const node = this;
    if (!node.loaded) load(node);
    const done = reflectDefine(target, key, slot);
    if (typeof key === "string") {
      writtenOf(node)[key] = true;
      if (mayBeIndex(key)) node.shuffled = true;
    }
    if (key === "toJSON") fullState = true;
    // Anything but a plain data property (a getter, a hidden or read-only one) is sent as JSON sees it.
    if ("get" in slot || "set" in slot || slot.enumerable === false) node.whole = true;
    touch(node);
    return done;
  };
  TRAPS.has = function (target, key) {
    if (!this.loaded) load(this);
    return reflectHas(target, key);
  };
  TRAPS.ownKeys = function (target) {
    if (!this.loaded) load(this);
    return ownKeys(target);
  };
  TRAPS.preventExtensions = function (target) {
    const node = this;
    if (!node.loaded) load(node);
    node.whole = true;
    touch(node);
    return reflectPrevent(target);
  };
  TRAPS.setPrototypeOf = function (target, prototype) {
    const node = this;
    if (!node.loaded) load(node);
    node.whole = true;
    touch(node);
    return reflectSetPrototype(target, prototype);
  };

  /** The JSON text of a node's path without its brackets ("" for the root), made once per node. */
  function pathText(node) {
    if (node.pathText === undefined) {
      const parent = node.parent;
      node.pathText =
        parent.parent === undefined ? stringify(node.key) : pathText(parent) + "," + stringify(node.key);
    }
    return node.pathText;
  }
  function nodePath(node) {
    return node.parent === undefined ? "[]" : "[" + pathText(node) + "]";
  }
  function keyPath(node, key) {
    return node.parent === undefined ? "[" + stringify(key) + "]" : "[" + pathText(node) + "," + stringify(key) + "]";
  }
  /** One change as JSON text; a value JSON leaves out (undefined, a function) deletes, as it would there. */
  function change(path, value) {
    const text = stringify(value);
    return text === undefined ? "[1," + path + "]" : "[0," + path + "," + text + "]";
  }
  /** Whether a written node's keys are its kept base keys in their order, then new keys (see emit). */
  function inOrder(node, keys) {
    let at = 0;
    const present = createObject(null);
    for (let i = 0; i < keys.length; i++) if (typeof keys[i] === "string") present[keys[i]] = true;
    const base = node.baseKeys;
    const isBase = createObject(null);
    for (let i = 0; i < base.length; i++) {
      isBase[base[i]] = true;
      if (!(base[i] in present)) continue;
      while (at < keys.length && typeof keys[at] !== "string") at++;
      if (keys[at] !== base[i]) return false;
      at++;
    }
    for (; at < keys.length; at++) {
      if (typeof keys[at] === "string" && keys[at] in isBase) return false;
    }
    return present;
  }
  /** The changes under one node, appended to out (an array of JSON texts). */
  function emit(node, out) {
    if (!node.touched) return;
    if (!node.loaded) {
      const keys = node.pendingKeys;
      if (keys === undefined) return;
      for (let i = 0; i < keys.length; i++) {
        const value = node.pending[keys[i]];
        const path = keyPath(node, keys[i]);
        out[out.length] = value === DELETED ? "[1," + path + "]" : change(path, value);
      }
      return;
    }
    const target = node.target;
    if (node.whole) {
      out[out.length] = change(nodePath(node), node.proxy);
      return;
    }
    const keys = ownKeys(target);
    const written = node.written;
    // The changes must also give the same key order: kept keys where they were, new keys after them.
    // Only a delete, keys written before the node was read or a key that may be an index can change it.
    if (written !== undefined && node.shuffled) {
      const present = inOrder(node, keys);
      if (present === false) {
        out[out.length] = change(nodePath(node), node.proxy);
        return;
      }
      const base = node.baseKeys;
      for (let i = 0; i < base.length; i++) {
        if (base[i] in written && !(base[i] in present)) out[out.length] = "[1," + keyPath(node, base[i]) + "]";
      }
    }
    const children = node.children;
    const arrays = node.arrays;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (typeof key !== "string") continue;
      // Every own key of a node that is not sent whole is a plain data property (see defineProperty).
      const value = target[key];
      const child = children !== undefined ? children[key] : undefined;
      if (child !== undefined && value === child.proxy) emit(child, out);
      else if (
        (written !== undefined && key in written) ||
        (arrays !== undefined && key in arrays && value === arrays[key])
      ) {
        if (!isLazy(value)) out[out.length] = change(keyPath(node, key), value);
      }
    }
  }

  /** Reads the call's input and takes its tapes: the input object, or a report (a string) when unreadable. */
  function begin(inputText) {
    const newline = apply(textIndexOf, inputText, NEWLINE);
    let input;
    try {
      input = parse(newline < 0 ? inputText : apply(textSlice, inputText, [newline + 1]));
    } catch (problem) {
      return raised(problem);
    }
    tapeText = newline <= 0 ? "" : apply(textSlice, inputText, [0, newline]);
    tapeClock = NONE;
    tapeRandom = NONE;
    tapeIds = NONE;
    usedClock = 0;
    usedRandom = 0;
    usedIds = 0;
    return input;
  }
  /** The tool's function from its source, or a report (a string) when it is none. */
  function compile(source) {
    let tool;
    try {
      tool = globalEval('"use strict";\n(' + source + "\n)");
    } catch (problem) {
      if (problem instanceof CompileError) return report({ kind: "compile", message: describe(problem) });
      return raised(problem);
    }
    if (typeof tool !== "function") {
      return report({ kind: "not-a-function", type: tool === null ? "null" : typeof tool });
    }
    return tool;
  }
  /** A synchronous answer: the values the call took, then its report. */
  function answer(result) {
    return typeof result === "string" ? usage() + ";" + result : result;
  }
  function drive(source, inputText) {
    const input = begin(inputText);
    if (typeof input === "string") return answer(input);
    const tool = compile(source);
    if (typeof tool === "string") return answer(tool);
    return answer(call(tool, input));
  }
  // ctx's functions: the same for every call (the memory is restored after each one).
  const ctxNow = function now() {
    return nowText();
  };
  const ctxRandom = function random() {
    return randomNumber();
  };
  const ctxId = function id(prefix) {
    return prefix === undefined || prefix === null ? freshId(undefined) : freshId(toText(prefix));
  };
  const ctxFail = function fail(message, details) {
    const text = toText(message);
    let detailText;
    if (details !== undefined) {
      try {
        detailText = stringify(details);
      } catch (unstorable) {
        detailText = undefined;
      }
    }
    host.fail(text, detailText);
    const rejection = new Error(text);
    rejection.name = "ToolFailure";
    throw rejection;
  };
  /** Runs the tool on the input; the report as drive gives it. */
  function call(tool, input) {
    fullState = false;
    const root = input.root !== undefined ? makeNode(0, undefined, undefined, input.root) : undefined;
    const ctx = {
      state: root !== undefined ? root.proxy : input.state,
      args: input.args,
      now: ctxNow,
      random: ctxRandom,
      id: ctxId,
      fail: ctxFail,
    };
    function finish(observation) {
      try {
        const key = tampered();
        if (key !== undefined) return report({ kind: "tampered", target: "Object.prototype", key: key });
        if (root === undefined || ctx.state !== root.proxy || fullState) {
          return report({
            kind: "returned",
            observation: observation === undefined ? null : observation,
            state: ctx.state,
          });
        }
        let shown;
        const out = [];
        try {
          shown = stringify(observation === undefined ? null : observation);
          emit(root, out);
        } catch (problem) {
          if (problem instanceof EngineError && problem.message === "out of memory") return '{"kind":"memory"}';
          return report({ kind: "unserializable", message: describe(problem) });
        }
        let text = '{"kind":"returned","observation":' + (shown === undefined ? "null" : shown) + ',"changes":[';
        for (let i = 0; i < out.length; i++) text += (i === 0 ? "" : ",") + out[i];
        return text + "]}";
      } catch (problem) {
        return raised(problem);
      }
    }
    let result;
    try {
      result = tool(ctx);
    } catch (problem) {
      return raised(problem);
    }
    if (result !== null && (typeof result === "object" || typeof result === "function")) {
      let then;
      try {
        then = result.then;
      } catch (problem) {
        return raised(problem);
      }
      if (typeof then === "function") {
        return new SandboxPromise(function (settle) {
          try {
            apply(then, result, [
              function (value) {
                settle(finish(value));
              },
              function (problem) {
                settle(raised(problem));
              },
            ]);
          } catch (problem) {
            settle(raised(problem));
          }
        });
      }
    }
    return finish(result);
  }
  // A tool compiled once (the engine keeps a snapshot with it, snapshot.ts) and run on each call's input.
  drive.compile = compile;
  drive.run = function run(tool, inputText) {
    const input = begin(inputText);
    if (typeof input === "string") return answer(input);
    return answer(call(tool, input));
  };
  // How many clock readings, random numbers and ids the call took (tapes first), read by the engine when
  // the call gave no synchronous answer.
  drive.usage = usage;
  return drive;
})`;
