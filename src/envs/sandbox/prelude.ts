/**
 * The JavaScript that runs inside the sandbox's context before a tool does. It is a function expression:
 * called once with the host object (`now`, `clock`, `random`, `id`, `load`, `fail`), it returns
 * `drive(source, input)`, which compiles the tool's source, calls it with `ctx`, and answers with ONE JSON
 * string (or a promise of one) describing what happened. The host never reads guest objects, only that
 * string (and `drive.usage()`, the count of values the call took).
 *
 * Everything the driver relies on is captured before the tool's code is evaluated, so a tool that replaces
 * globals (JSON, Reflect, Promise, Date, Proxy) cannot change how its result is read. Date and Math.random
 * read the environment's seeded clock and random source (values drawn ahead come with the input as
 * `tape`), so a seeded run repeats exactly. A change a tool makes to Object.prototype (prototype
 * pollution) is detected and fails the call; the engine writes its memory snapshot back after every call
 * anyway (snapshot.ts), so nothing a tool changes in its globals reaches another call.
 *
 * Input: `{state, args, tape?}`, or `{root, args, tape?}` for a lazy draft of the state (see below), whose
 * answer lists the changes instead of the whole state.
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

  // Values the host drew ahead for this call (sources.ts), taken in order before the host is asked.
  const NONE = [];
  let tapeClock = NONE;
  let tapeNow = NONE;
  let tapeRandom = NONE;
  let tapeIds = NONE;
  let usedClock = 0;
  let usedRandom = 0;
  let usedIds = 0;
  function reading() {
    const index = usedClock++;
    return index < tapeClock.length ? tapeClock[index] : host.clock();
  }
  function nowText() {
    const index = usedClock++;
    return index < tapeNow.length ? tapeNow[index] : host.now();
  }
  function randomNumber() {
    const index = usedRandom++;
    return index < tapeRandom.length ? tapeRandom[index] : host.random();
  }
  function freshId(prefix) {
    const index = usedIds++;
    if (index < tapeIds.length) return prefix ? prefix + "_" + tapeIds[index] : tapeIds[index];
    return prefix === undefined ? host.id() : host.id(prefix);
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

  // Object.prototype, which every object inherits from, is recorded now and compared after the call.
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
  const ObjectPrototype = Object.prototype;
  const baseline = record(ObjectPrototype);

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
  const ProxyClass = Proxy;
  const reflectGet = Reflect.get;
  const reflectSet = Reflect.set;
  const reflectHas = Reflect.has;
  const reflectDelete = Reflect.deleteProperty;
  const reflectDefine = Reflect.defineProperty;
  const reflectPrevent = Reflect.preventExtensions;
  const reflectSetPrototype = Reflect.setPrototypeOf;
  const isArray = Array.isArray;
  const createObject = Object.create;
  function Lazy(id, array) {
    this.id = id;
    this.array = array;
  }
  const LazyPrototype = Lazy.prototype;
  const DELETED = createObject(null);
  let fullState = false;

  function dataSlot(value) {
    return { value: value, writable: true, enumerable: true, configurable: true };
  }
  function isLazy(value) {
    return value !== null && typeof value === "object" && prototypeOf(value) === LazyPrototype;
  }
  function makeNode(id, path, entries) {
    const node = {
      id: id,
      path: path,
      target: {},
      proxy: undefined,
      loaded: false,
      // Before loading: writes by key, in the order first made; DELETED for deletes.
      pending: createObject(null),
      pendingKeys: [],
      // After loading: keys written or deleted, and whether the node can only be sent whole.
      written: createObject(null),
      whole: false,
      baseKeys: [],
      children: createObject(null),
      arrays: createObject(null),
    };
    node.proxy = new ProxyClass(node.target, handlerFor(node));
    if (entries !== undefined) fill(node, entries);
    return node;
  }
  function fill(node, entries) {
    const target = node.target;
    const pending = node.pending;
    const baseKeys = node.baseKeys;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i];
      const key = entry[0];
      baseKeys[i] = key;
      let value = entry[1] === 0 ? entry[2] : new Lazy(entry[2], entry[1] === 2);
      if (key in pending) {
        value = pending[key];
        if (value === DELETED) continue;
      }
      reflectDefine(target, key, dataSlot(value));
    }
    const keys = node.pendingKeys;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const value = pending[key];
      if (value !== DELETED && describeProperty(target, key) === undefined) {
        reflectDefine(target, key, dataSlot(value));
      }
      node.written[key] = true;
    }
    node.loaded = true;
  }
  function load(node) {
    if (!node.loaded) fill(node, parse(host.load(node.id)));
  }
  /** What a slot holds, with a child not yet reached turned into its draft (or its array). */
  function reveal(node, key, value) {
    if (!isLazy(value)) return value;
    let revealed;
    if (value.array) {
      revealed = parse(host.load(value.id));
      node.arrays[key] = revealed;
    } else {
      const path = [];
      for (let i = 0; i < node.path.length; i++) path[i] = node.path[i];
      path[path.length] = key;
      const child = makeNode(value.id, path, undefined);
      node.children[key] = child;
      revealed = child.proxy;
    }
    reflectDefine(node.target, key, dataSlot(revealed));
    return revealed;
  }
  function handlerFor(node) {
    return {
      get: function (target, key, receiver) {
        load(node);
        const slot = describeProperty(target, key);
        if (slot !== undefined && "value" in slot) return reveal(node, key, slot.value);
        return reflectGet(target, key, receiver);
      },
      getOwnPropertyDescriptor: function (target, key) {
        load(node);
        const slot = describeProperty(target, key);
        if (slot !== undefined && "value" in slot && isLazy(slot.value)) {
          reveal(node, key, slot.value);
          return describeProperty(target, key);
        }
        return slot;
      },
      set: function (target, key, value, receiver) {
        // A write alone needs nothing from the host, unless something up the prototype chain has a
        // say in what the write does (a setter such as __proto__'s, or a read-only property).
        if (
          !node.loaded &&
          receiver === node.proxy &&
          typeof key === "string" &&
          node.pending[key] !== DELETED &&
          !reflectHas(ObjectPrototype, key)
        ) {
          if (!(key in node.pending)) node.pendingKeys[node.pendingKeys.length] = key;
          node.pending[key] = value;
          if (key === "toJSON") fullState = true;
          return true;
        }
        load(node);
        return reflectSet(target, key, value, receiver);
      },
      deleteProperty: function (target, key) {
        if (!node.loaded && typeof key === "string") {
          if (!(key in node.pending)) node.pendingKeys[node.pendingKeys.length] = key;
          node.pending[key] = DELETED;
          return true;
        }
        load(node);
        const done = reflectDelete(target, key);
        if (typeof key === "string") node.written[key] = true;
        return done;
      },
      defineProperty: function (target, key, slot) {
        load(node);
        const done = reflectDefine(target, key, slot);
        if (typeof key === "string") node.written[key] = true;
        if (key === "toJSON") fullState = true;
        // Anything but a plain data property (a getter, a hidden or read-only one) is sent as JSON sees it.
        if ("get" in slot || "set" in slot || slot.enumerable === false) node.whole = true;
        return done;
      },
      has: function (target, key) {
        load(node);
        return reflectHas(target, key);
      },
      ownKeys: function (target) {
        load(node);
        return ownKeys(target);
      },
      preventExtensions: function (target) {
        load(node);
        node.whole = true;
        return reflectPrevent(target);
      },
      setPrototypeOf: function (target, prototype) {
        load(node);
        node.whole = true;
        return reflectSetPrototype(target, prototype);
      },
    };
  }

  /** One change as JSON text; a value JSON leaves out (undefined, a function) deletes, as it would there. */
  function change(path, value) {
    const text = stringify(value);
    return text === undefined ? "[1," + stringify(path) + "]" : "[0," + stringify(path) + "," + text + "]";
  }
  function extend(path, key) {
    const longer = [];
    for (let i = 0; i < path.length; i++) longer[i] = path[i];
    longer[path.length] = key;
    return longer;
  }
  /** The changes under one node, appended to out (an array of JSON texts). */
  function emit(node, out) {
    if (!node.loaded) {
      const keys = node.pendingKeys;
      for (let i = 0; i < keys.length; i++) {
        const value = node.pending[keys[i]];
        const path = extend(node.path, keys[i]);
        out[out.length] = value === DELETED ? "[1," + stringify(path) + "]" : change(path, value);
      }
      return;
    }
    const target = node.target;
    const keys = ownKeys(target);
    // The changes must also give the same key order: kept keys where they were, new keys after them.
    let ordered = !node.whole;
    if (ordered) {
      let at = 0;
      const present = createObject(null);
      for (let i = 0; i < keys.length; i++) if (typeof keys[i] === "string") present[keys[i]] = true;
      const base = node.baseKeys;
      const isBase = createObject(null);
      for (let i = 0; i < base.length; i++) {
        isBase[base[i]] = true;
        if (!(base[i] in present)) continue;
        while (at < keys.length && typeof keys[at] !== "string") at++;
        if (keys[at] !== base[i]) {
          ordered = false;
          break;
        }
        at++;
      }
      for (; ordered && at < keys.length; at++) {
        if (typeof keys[at] === "string" && keys[at] in isBase) ordered = false;
      }
      if (ordered) {
        for (let i = 0; i < base.length; i++) {
          if (base[i] in node.written && !(base[i] in present)) {
            out[out.length] = "[1," + stringify(extend(node.path, base[i])) + "]";
          }
        }
      }
    }
    if (!ordered) {
      out[out.length] = change(node.path, node.proxy);
      return;
    }
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (typeof key !== "string") continue;
      const slot = describeProperty(target, key);
      const value = slot.value;
      const child = node.children[key];
      if (child !== undefined && value === child.proxy) emit(child, out);
      else if (key in node.written || (key in node.arrays && value === node.arrays[key])) {
        if (!isLazy(value)) out[out.length] = change(extend(node.path, key), value);
      }
    }
  }

  /** Reads the call's input and takes its tapes: the input object, or a report (a string) when unreadable. */
  function begin(inputText) {
    let input;
    try {
      input = parse(inputText);
    } catch (problem) {
      return raised(problem);
    }
    const tape = input.tape;
    tapeClock = tape !== undefined && tape.clock !== undefined ? tape.clock : NONE;
    tapeNow = tape !== undefined && tape.now !== undefined ? tape.now : NONE;
    tapeRandom = tape !== undefined && tape.random !== undefined ? tape.random : NONE;
    tapeIds = tape !== undefined && tape.ids !== undefined ? tape.ids : NONE;
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
  function drive(source, inputText) {
    const input = begin(inputText);
    if (typeof input === "string") return input;
    const tool = compile(source);
    if (typeof tool === "string") return tool;
    return call(tool, input);
  }
  /** Runs the tool on the input; the report as drive gives it. */
  function call(tool, input) {
    fullState = false;
    const root = input.root !== undefined ? makeNode(0, [], input.root) : undefined;
    const ctx = {
      state: root !== undefined ? root.proxy : input.state,
      args: input.args,
      now: function now() {
        return nowText();
      },
      random: function random() {
        return randomNumber();
      },
      id: function id(prefix) {
        return prefix === undefined || prefix === null ? freshId(undefined) : freshId(toText(prefix));
      },
      fail: function fail(message, details) {
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
      },
    };
    function finish(observation) {
      try {
        const key = changedKey(ObjectPrototype, baseline);
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
    if (typeof input === "string") return input;
    return call(tool, input);
  };
  // How many clock readings, random numbers and ids the call took (tapes first), read by the engine.
  drive.usage = function usage() {
    return usedClock + "," + usedRandom + "," + usedIds;
  };
  return drive;
})`;
