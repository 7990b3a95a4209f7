export * from "./catalog/index.js";
export * from "./core/index.js";
export * from "./envs/index.js";
export * from "./models/index.js";
export * from "./server/index.js";
export * from "./sessions/index.js";
export * from "./sim/index.js";
export * from "./validate/index.js";
