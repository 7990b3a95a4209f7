export { type AppOptions, createApp, routeOf } from "./app.js";
export { buildEngine, isEnvironmentReference, type ServeOptions, startServer } from "./start.js";
