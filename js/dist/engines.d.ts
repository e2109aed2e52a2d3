/** The engines of this process (a Vitest worker): one `otel-replay serve` serves test
 * after test, switched to each test's cassette by the protocol's `use` line, instead of a
 * new engine for each. The first test takes the engine the run's setup started for this
 * worker's slot (`pool.ts`), else starts one (with its cassette: no switch); each
 * test's end switches it to no cassette, which answers that test's own summary. An engine
 * whose settings differ (another engine command, other upstreams or options), or a test
 * that overlaps one in progress (`test.concurrent`), gets an engine of its own. Engines
 * do not keep the process alive: they end with it (their standard input then ends). */
import { type EngineOptions, type Mode } from "./engine.js";
import type { Summary } from "./summary.js";
/** An engine in use by one test: its environment, and `release` at the test's end. */
export interface Lease {
    readonly env: Record<string, string>;
    /** Switch the engine to no cassette and return the test's summary; the engine then
     * waits for the next test. */
    release(): Promise<Summary>;
}
/** An engine serving `cassette` in `mode`: an idle one of the same settings switched to
 * it, else a new one started for it. */
export declare function lease(cassette: string, mode: Mode, options: EngineOptions): Promise<Lease>;
