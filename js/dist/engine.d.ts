/** The engine: finding `otel-replay`, and running `otel-replay serve`.
 *
 * The `serve` protocol is the only thing shared with the engine: it prints one JSON line
 * `{"env": {...}}` once the gateway is ready (a request sent then is served as a warm one
 * is), switches cassettes at each line `{"use": {"cassette": PATH, "mode": MODE}}` on its
 * standard input (answered `{"used": {"summary": <the previous one's>, "env": {...}}}`, or
 * `{"error": "…"}`), serves until its standard input ends, then prints
 * `{"summary": {...}}` and exits. */
import type { Summary } from "./summary.js";
export declare const MODES: readonly ["strict", "auto", "record", "off"];
export type Mode = (typeof MODES)[number];
/** Thrown for a setting that cannot work: no engine, an unknown mode, a bad cassette. */
export declare class OtelReplayError extends Error {
    name: string;
}
/** A strict miss (or a failure to save) that fails the test, whatever the agent did with
 * the error its client got. */
export declare class ReplayMissError extends Error {
    name: string;
}
export interface Engine {
    command: string;
    args: string[];
    /** Where the engine came from, for error messages. */
    source: string;
}
/** The engine: `enginePath`, else `OTEL_REPLAY_BIN`, else `otel-replay` on PATH, else
 * `python3 -m otel_replay`. */
export declare function findEngine(enginePath?: string | readonly string[], env?: NodeJS.ProcessEnv): Engine;
/** The mode: the option, else `OTEL_REPLAY_MODE`, else `strict` when `CI` is set (and
 * not false-ish) and `auto` otherwise. */
export declare function resolveMode(option?: string, env?: NodeJS.ProcessEnv): Mode;
/** The settings `useReplay` and the run-wide setup share. */
export interface EngineOptions {
    /** `strict` | `auto` | `record` | `off`; default `OTEL_REPLAY_MODE`, else `strict` when
     * `CI` is set and `auto` otherwise. */
    mode?: Mode;
    /** The engine's command: a path, or words (`.venv/bin/python -m otel_replay`); default
     * `OTEL_REPLAY_BIN`, else `otel-replay` on PATH, else `python3 -m otel_replay`. */
    enginePath?: string | readonly string[];
    /** Upstreams by provider name (`{ openai: "http://…/v1" }`): `--upstream-NAME URL`. */
    upstreams?: Record<string, string>;
    /** More `otel-replay serve` options, as words. */
    args?: readonly string[];
}
/** The `serve` options the settings ask for. */
export declare function serveArgs(options: EngineOptions): string[];
export interface ServeOptions {
    engine: Engine;
    cassette?: string;
    mode: Mode;
    /** More `serve` options, e.g. `["--upstream-openai", url]`. */
    args?: readonly string[];
    cwd?: string;
    env?: NodeJS.ProcessEnv;
}
/** What a `use` line is answered: the previous cassette's summary, the new environment. */
export interface Used {
    summary: Summary;
    env: Record<string, string>;
}
/** A running `otel-replay serve`. */
export declare class Serve {
    /** The environment of the cassette in use. */
    env: Record<string, string>;
    private readonly child;
    private readonly lines;
    private readonly stderr;
    private stopped;
    private queue;
    private constructor();
    /** Start the engine; resolves once its gateway is ready (its first line). */
    static start(options: ServeOptions): Promise<Serve>;
    /** Start the engine without waiting: its process id at once (undefined when it could
     * not be spawned), and the engine once its gateway is ready. */
    static launch(options: ServeOptions): {
        pid: number | undefined;
        ready: Promise<Serve>;
    };
    private static started;
    private static failedToStart;
    /** Whether the engine has ended (or is ending): it takes no more `use` lines. */
    get ended(): boolean;
    /** Let this process exit while the engine runs: the engine ends with it (its standard
     * input then ends), writing what its last cassette asked for. */
    unref(): void;
    /** Point the running engine at another cassette (none: no cassette, strict, a model
     * call then is a miss): the `use` line of the `serve` protocol. Returns the previous
     * cassette's summary and the environment for the new one (the same port). */
    use(cassette?: string, mode?: Mode): Promise<Used>;
    private ask;
    /** End the run (end of standard input) and return its summary. */
    stop(timeoutMs?: number): Promise<Summary>;
    private finish;
}
/** The protocol's `use` line for `cassette` in `mode` (none: no cassette). */
export declare function useLine(cassette?: string, mode?: Mode): string;
/** Where the run-wide setup hands the test workers the engines it started for them
 * (`pool.ts`): never passed on to an engine. */
export declare const ENGINES = "OTEL_REPLAY_ENGINES";
/** Set `env` in `process.env`; returns what puts the previous values back. */
export declare function applyEnv(env: Record<string, string>): () => void;
/** Hand the values `env` replaced on to processes started from here (the test workers):
 * `callerEnv` there undoes them too. */
export declare function passOuterEnv(env: Record<string, string>, previous: NodeJS.ProcessEnv): void;
/** The environment as the caller had it before any gateway's was set: what an engine is
 * started with, so that its upstreams are the caller's own (`OPENAI_BASE_URL` …), never
 * another gateway. */
export declare function callerEnv(): NodeJS.ProcessEnv;
