/**
 * The JavaScript that runs inside every sandbox context before a tool does. It is a function expression:
 * called once with the host object (`now`, `clock`, `random`, `id`, `fail`), it returns `drive(source,
 * input)`, which compiles the tool's source, calls it with `ctx`, and answers with ONE JSON string (or a
 * promise of one) describing what happened. The host never reads guest objects, only that string.
 *
 * Everything the driver relies on is captured before the tool's code is evaluated, so a tool that replaces
 * globals (JSON, Reflect, Promise, Date) cannot change how its result is read. Date and Math.random read
 * the environment's seeded clock and random source, so a seeded run repeats exactly. A change a tool makes
 * to Object.prototype (prototype pollution) is detected and fails the call; every call gets a new context
 * anyway, so nothing a tool changes in its globals reaches another call.
 *
 * Reports: {kind: "returned", observation, state} | {kind: "raised", message} | {kind: "compile", message}
 * | {kind: "not-a-function", type} | {kind: "unserializable", message} | {kind: "tampered", target, key}
 * | {kind: "memory"}.
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

  Math.random = function random() {
    return host.random();
  };
  const SeededDate = function Date(...parts) {
    if (new.target === undefined) return toText(new HostDate(host.clock()));
    return parts.length === 0
      ? construct(HostDate, [host.clock()], new.target)
      : construct(HostDate, parts, new.target);
  };
  SeededDate.prototype = HostDate.prototype;
  SeededDate.now = function now() {
    return host.clock();
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

  return function drive(source, inputText) {
    let input;
    try {
      input = parse(inputText);
    } catch (problem) {
      return raised(problem);
    }
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
    const ctx = {
      state: input.state,
      args: input.args,
      now: function now() {
        return host.now();
      },
      random: function random() {
        return host.random();
      },
      id: function id(prefix) {
        return prefix === undefined || prefix === null ? host.id() : host.id(toText(prefix));
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
        return report({
          kind: "returned",
          observation: observation === undefined ? null : observation,
          state: ctx.state,
        });
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
  };
})`;
