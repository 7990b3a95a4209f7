export { isEnvironmentReference } from "../envs/load.js";
export {
  type CompletedCall,
  resultFailed,
  type StateUpdate,
  updateStateWithModel,
} from "../sim/state-updater.js";
export { type AppOptions, createApp } from "./app.js";
export type { UsageEvent } from "./gecko-routes.js";
export {
  type HttpEvent,
  LATENCY_BUCKETS,
  ServerMetrics,
  type ServerMetricsOptions,
  type ToolCallEvent,
  watchEngineCalls,
  watchLedger,
} from "./metrics.js";
export { bareProfile, describeProfile, type ServerProfile } from "./profile.js";
export { type HttpMethod, type Route, type RouteSpec, RouteTable } from "./route-table.js";
export { DEFAULT_DRAIN_TIMEOUT_SECONDS, Drain, type ShutdownReport } from "./shutdown.js";
export { type ServeOptions, startServer } from "./start.js";
export { defaultApiNames, type ToolRouteKind, toolRoutes } from "./tool-routes.js";
export { SPAN_ATTRIBUTES, TRACER_NAME } from "./tracing.js";
