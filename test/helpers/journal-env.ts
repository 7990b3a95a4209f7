import { defineEnvironment } from "../../src/envs/index.js";

/** An environment whose state grows by one entry per write, as a bank's transfers do (cost tests). */
export const journal = defineEnvironment<{
  entries: Record<string, { n: number; memo: string }>;
  count: number;
}>({
  name: "journal",
  description: "A journal that keeps every entry.",
  initialState: { entries: {}, count: 0 },
  tools: {
    add_entry: {
      description: "Add an entry.",
      effect: "write",
      input: { properties: { n: { type: "number" } }, required: ["n"] },
      run: ({ state, args }) => {
        state.entries[`E-${args.n}`] = { n: args.n, memo: `entry ${args.n}` };
        state.count += 1;
        return { count: state.count };
      },
    },
  },
});
