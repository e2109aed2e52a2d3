/** `otel-replay/vitest/summary`: a Vitest `globalSetup` that starts no engine for the
 * run itself, only the test workers' engines (`pool.ts`: a worker's `useReplay` switches
 * one instead of starting one), and prints, at the end of the run, the summary of every
 * `useReplay` of the run (the pytest plugin's summary). `otel-replay/vitest/setup` does
 * the same beside its run-wide engine. */
import { replaySetup } from "./setup.js";
export default replaySetup({ cassette: null });
//# sourceMappingURL=summary-setup.js.map