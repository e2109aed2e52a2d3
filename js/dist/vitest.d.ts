/** `useReplay` for Vitest: one test's model calls replayed from (or recorded into) a
 * cassette, by the worker's `otel-replay serve` switched to it (`engines.ts`).
 *
 * ```ts
 * import { useReplay } from "otel-replay/vitest";
 *
 * test("answers", async () => {
 *   await useReplay("answers");            // cassettes/answers.json beside this file
 *   const openai = new OpenAI();           // reads OPENAI_BASE_URL: the gateway
 *   ...
 * });
 * ```
 */
import { type EngineOptions, type Mode } from "./engine.js";
import { type Summary } from "./summary.js";
export { OtelReplayError, ReplayMissError } from "./engine.js";
export type { EngineOptions, Mode } from "./engine.js";
export type { Block, Summary } from "./summary.js";
export interface ReplayOptions extends EngineOptions {
    /** The cassette folder; default `cassettes` beside the test file (a relative folder is
     * taken from the test file's folder). */
    fixturesDir?: string;
}
/** The running replay of one test. `summary` is set once the test has ended. */
export interface Replay {
    readonly cassette: string;
    readonly mode: Mode;
    /** The variables set for the test: the gateway's URLs and the OTLP endpoints. */
    readonly env: Readonly<Record<string, string>>;
    /** The certificate authority (PEM) the gateway's TLS is signed by, when it serves TLS
     * (`OTEL_REPLAY_TLS=1`). Node reads `NODE_EXTRA_CA_CERTS` only as a process starts, so a
     * `wss://` client made in a worker already running takes it as its `ca`:
     * `new OpenAIRealtimeWS({ model, options: { ca: replay.ca } })`. */
    readonly ca?: string;
    summary?: Summary;
}
/** Have the worker's engine serve `<fixturesDir>/<name>.json` (the first call in a worker
 * starts it), set its environment until the test ends, then fail the test on a miss — also
 * when the agent swallowed the error its client got, and also in a test marked `it.fails`
 * (a miss is never an expected failure). In auto mode, a test whose misses could not go
 * live because no key of the provider is set is skipped as *not evaluated* instead
 * (`not evaluated: replay miss: …`), unless `OTEL_REPLAY_STRICT=1`. */
export declare function useReplay(name: string, options?: ReplayOptions): Promise<Replay>;
