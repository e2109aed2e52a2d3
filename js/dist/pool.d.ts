/** Engines that outlive a test file: the run's setup starts one per Vitest worker slot
 * (`VITEST_POOL_ID`, from 1 to the number of workers, handed from file to file) without
 * waiting for it, and hands the workers its port and the token of its control route in
 * `OTEL_REPLAY_ENGINES`. A worker's first `useReplay` switches its slot's engine by the
 * control route (`POST /_otel_replay/use`: the `serve` protocol's `use` line over HTTP,
 * since only the setup holds the engine's standard input) instead of starting one; the
 * worker's engines (`engines.ts`) then keep it from test to test. An engine whose
 * settings differ from the setup's (another engine command, other upstreams or options,
 * another environment) is never taken: such a test starts its own, as without the setup. */
import { type Engine, type Mode, type Used } from "./engine.js";
import type { Summary } from "./summary.js";
/** One string for an engine's settings: its command, its `serve` options and the
 * environment it is started with (what Vitest adds to a worker's left out). */
export declare function settingsKey(engine: Engine, args: readonly string[], env: NodeJS.ProcessEnv): string;
/** The engines the setup started; `stop()` ends them and returns their last summaries
 * (a block a worker left open when it ended mid-test). */
export interface Pool {
    stop(): Promise<Summary[]>;
}
/** Start `count` engines without waiting for them and hand them to the test workers
 * (set in this process's environment, which the workers inherit). */
export declare function startPool(count: number, engine: Engine, args: readonly string[], mode: Mode): Promise<Pool>;
/** How many engines a run's workers can use: Vitest's number of workers (`maxWorkers`,
 * else one less than the cores, half of them in watch mode), at most one per test file. */
export declare function workerCount(config: {
    maxWorkers?: number | string;
    fileParallelism?: boolean;
    watch?: boolean;
} | undefined, files: number): number;
/** An engine switched by its control route. */
export interface Switchable {
    readonly env: Record<string, string>;
    readonly ended: boolean;
    use(cassette?: string, mode?: Mode): Promise<Used>;
}
/** The setup's engine of this worker's slot, when there is one with settings `key` and
 * this process has not taken it yet; null otherwise. */
export declare function claim(key: string, env?: NodeJS.ProcessEnv): Switchable | null;
