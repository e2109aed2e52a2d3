/** `otel-replay/vitest/setup`: a Vitest `globalSetup` that runs one `otel-replay serve`
 * for the whole run, for clients built when a module is imported (the AI SDK's default
 * providers read their base URL then), and prints the run's summary at its end.
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
    };
    vitest?: {
        state?: {
            getFiles(): Task[];
        };
    };
}
/** A `globalSetup` function with these settings. */
export declare function replaySetup(options?: SetupOptions): (project: Project) => Promise<() => Promise<void>>;
declare const _default: (project: Project) => Promise<() => Promise<void>>;
export default _default;
