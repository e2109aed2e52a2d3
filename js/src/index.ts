/** otel-replay for Node: the engine's `serve` protocol, and the summary it reports.
 * The Vitest helpers are `otel-replay/vitest` and `otel-replay/vitest/setup`. */

export {
  applyEnv,
  callerEnv,
  findEngine,
  MODES,
  OtelReplayError,
  ReplayMissError,
  resolveMode,
  Serve,
  serveArgs,
  type Engine,
  type EngineOptions,
  type Mode,
  type ServeOptions,
  type Used,
} from "./engine.js";
export { cassettePath } from "./cassette.js";
export {
  combined,
  failure,
  notEvaluated,
  runSection,
  strictOutcomes,
  summaryLine,
  type Block,
  type Outcome,
  type Summary,
} from "./summary.js";
