import { defineEnvironment } from "../src/envs/define.js";

/**
 * The smallest environment worth stepping: a counter with a write and a read. `bench/rl.ts` serves it to
 * compare terrarium's OpenEnv interface with the Python baseline's counter (bench/python/openenv_minimal.py),
 * the same environment on both, so the difference is the servers'.
 */
export const counter = defineEnvironment<{ count: number }>({
  name: "counter",
  description: "A counter: add to it, read it.",
  initialState: { count: 0 },
  tools: {
    increment: {
      description: "Add `by` (default 1) to the counter and return its new value.",
      effect: "write",
      input: { properties: { by: { type: "integer" } } },
      run: ({ state, args }) => {
        state.count += args.by ?? 1;
        return { count: state.count };
      },
    },
    get_count: {
      description: "Return the counter's value.",
      effect: "read",
      input: { properties: {} },
      run: ({ state }) => ({ count: state.count }),
    },
  },
});
