/**
 * EnvSimBench from code: collect transitions from environments, build a stratified benchmark, run
 * simulators over it, score FM/CM, render reports, and write SFT training data. The CLI (`terrarium
 * envsim …`) is a thin layer over these.
 */
export * from "./build.js";
export * from "./collect.js";
export * from "./errors.js";
export * from "./evaluate.js";
export * from "./groups.js";
export * from "./prompts/simulation.js";
export * from "./records.js";
export * from "./report.js";
export * from "./sample-files.js";
export * from "./sample-store.js";
export * from "./score.js";
export * from "./sft.js";
export * from "./types.js";
