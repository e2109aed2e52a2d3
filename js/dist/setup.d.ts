/** `otel-replay/vitest/setup`: a Vitest `globalSetup` that runs one `otel-replay serve`
 * for the whole run, for clients built when a module is imported (the AI SDK's default
 * providers read their base URL then), starts the test workers' engines (`pool.ts`), and
 * prints the run's summary at its end.
 *
 * ```ts
 * // vitest.config.ts
 * export default defineConfig({ test: { globalSetup: ["otel-replay/vitest/setup"] } });
 * ```
 *
 * The run's cassette is `OTEL_REPLAY_CASSETTE`, else `cassettes/run.json` under the
 * project's root; the mode and the engine are found as for `useReplay`. For other
 * settings, a setup file of your own: `export default replaySetup({ cassette: "…" })`.
 */
import { type EngineOptions } from "./engine.js";
export interface SetupOptions extends EngineOptions {
    /** The run's cassette (relative to the project's root); default
     * `OTEL_REPLAY_CASSETTE`, else `cassettes/run.json`. `null`: no engine for the run, only
     * the summary of the tests' own (`otel-replay/vitest/summary`). */
    cassette?: string | null;
    /** Start an engine for each test worker with the run, without waiting for it (`true`,
     * the default): a worker's first `useReplay` then switches it instead of starting one,
     * and the files a worker runs in turn share it. `false`: each worker starts its own. */
    workerEngines?: boolean;
}
export interface Task {
    name: string;
    meta?: Record<string, unknown>;
    tasks?: Task[];
}
/** The part of Vitest's `TestProject` the setup reads. */
export interface Project {
    config: {
        root: string;
        maxWorkers?: number | string;
        fileParallelism?: boolean;
        watch?: boolean;
    };
    vitest?: {
        state?: {
            getFiles(): Task[];
            getPaths?(): string[];
        };
    };
}
/** A `globalSetup` function with these settings. */
export declare function replaySetup(options?: SetupOptions): (project: Project) => Promise<() => Promise<void>>;
declare const _default: (project: Project) => Promise<() => Promise<void>>;
export default _default;
