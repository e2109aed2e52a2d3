/** The engine: finding `otel-replay`, and running `otel-replay serve`.
 *
 * The `serve` protocol is the only thing shared with the engine: it prints one JSON line
 * `{"env": {...}}` once the gateway is ready (a request sent then is served as a warm one
 * is), switches cassettes at each line `{"use": {"cassette": PATH, "mode": MODE}}` on its
 * standard input (answered `{"used": {"summary": <the previous one's>, "env": {...}}}`, or
 * `{"error": "…"}`), serves until its standard input ends, then prints
 * `{"summary": {...}}` and exits. */
import { spawn } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { createInterface } from "node:readline";
export const MODES = ["strict", "auto", "record", "off"];
/** Thrown for a setting that cannot work: no engine, an unknown mode, a bad cassette. */
export class OtelReplayError extends Error {
    name = "OtelReplayError";
}
/** A strict miss (or a failure to save) that fails the test, whatever the agent did with
 * the error its client got. */
export class ReplayMissError extends Error {
    name = "ReplayMissError";
}
const MISSING_ENGINE = "otel-replay: no engine found; give one of: the enginePath option, " +
    "OTEL_REPLAY_BIN (the otel-replay command, or e.g. `.venv/bin/python -m otel_replay`), " +
    "or `otel-replay` on PATH (pip install otel-replay); `python3 -m otel_replay` was tried last";
function executable(path) {
    try {
        accessSync(path, constants.X_OK);
        return true;
    }
    catch {
        return false;
    }
}
function onPath(name, env) {
    for (const dir of (env.PATH ?? "").split(delimiter)) {
        if (dir && executable(join(dir, name)))
            return join(dir, name);
    }
    return null;
}
/** A command as given: an existing file is the command itself (spaces and all),
 * otherwise words separated by spaces (`python3 -m otel_replay`). */
function words(given) {
    if (typeof given !== "string")
        return [...given];
    if (existsSync(given))
        return [given];
    return given.trim().split(/\s+/).filter(Boolean);
}
/** The engine: `enginePath`, else `OTEL_REPLAY_BIN`, else `otel-replay` on PATH, else
 * `python3 -m otel_replay`. */
export function findEngine(enginePath, env = process.env) {
    const given = [
        [enginePath, "the enginePath option"],
        [env.OTEL_REPLAY_BIN, "OTEL_REPLAY_BIN"],
    ];
    for (const [value, source] of given) {
        if (value === undefined || value.length === 0)
            continue;
        const [command, ...args] = words(value);
        if (command === undefined)
            continue;
        return { command, args, source };
    }
    const installed = onPath("otel-replay", env);
    if (installed !== null)
        return { command: installed, args: [], source: "PATH" };
    const python = onPath("python3", env);
    if (python !== null)
        return { command: python, args: ["-m", "otel_replay"], source: "python3" };
    throw new OtelReplayError(MISSING_ENGINE);
}
/** The mode: the option, else `OTEL_REPLAY_MODE`, else `strict` when `CI` is set (and
 * not false-ish) and `auto` otherwise. */
export function resolveMode(option, env = process.env) {
    const ci = (env.CI ?? "").trim().toLowerCase();
    const fallback = ci && !["0", "false", "no"].includes(ci) ? "strict" : "auto";
    const chosen = option || env.OTEL_REPLAY_MODE || fallback;
    if (!MODES.includes(chosen)) {
        throw new OtelReplayError(`otel-replay: unknown mode ${JSON.stringify(chosen)}; use one of ${MODES.join(", ")}`);
    }
    return chosen;
}
/** The `serve` options the settings ask for. */
export function serveArgs(options) {
    const args = [];
    for (const [name, url] of Object.entries(options.upstreams ?? {})) {
        args.push(`--upstream-${name}`, url);
    }
    return args.concat(options.args ?? []);
}
/** A running `otel-replay serve`. */
export class Serve {
    /** The environment of the cassette in use. */
    env;
    child;
    lines;
    stderr;
    stopped = null;
    queue = Promise.resolve(); // one `use` line at a time
    constructor(child, lines, env, stderr) {
        this.child = child;
        this.lines = lines;
        this.env = env;
        this.stderr = stderr;
    }
    /** Start the engine; resolves once its gateway is ready (its first line). */
    static start(options) {
        return Serve.launch(options).ready;
    }
    /** Start the engine without waiting: its process id at once (undefined when it could
     * not be spawned), and the engine once its gateway is ready. */
    static launch(options) {
        const { engine, mode } = options;
        const args = [...engine.args, "serve", "--mode", mode];
        if (options.cassette !== undefined)
            args.push("--cassette", options.cassette);
        args.push(...(options.args ?? []));
        const child = spawn(engine.command, args, {
            cwd: options.cwd,
            env: options.env ?? callerEnv(),
            stdio: ["pipe", "pipe", "pipe"],
        });
        return { pid: child.pid, ready: Serve.started(child, engine) };
    }
    static async started(child, engine) {
        const stderr = [];
        child.stderr.setEncoding("utf8");
        child.stderr.on("data", (chunk) => {
            stderr.push(chunk);
            if (stderr.length > 200)
                stderr.splice(0, stderr.length - 200);
        });
        child.stdin.on("error", () => undefined); // the engine gone: its exit says why
        const spawned = new Promise((resolve, reject) => {
            child.once("spawn", resolve);
            child.once("error", reject);
        });
        try {
            await spawned;
        }
        catch (error) {
            const code = error.code;
            if (engine.source === "python3" || engine.source === "PATH" || code !== "ENOENT") {
                throw new OtelReplayError(`${MISSING_ENGINE} (${String(error)})`);
            }
            throw new OtelReplayError(`otel-replay: cannot run the engine ${JSON.stringify(engine.command)} from ` +
                `${engine.source}: ${String(error)}. ${MISSING_ENGINE}`);
        }
        const lines = createInterface({ input: child.stdout, crlfDelay: Infinity })[Symbol.asyncIterator]();
        const exited = new Promise((resolve) => child.once("close", resolve));
        for (;;) {
            const next = await lines.next();
            if (next.done) {
                const code = await exited;
                throw Serve.failedToStart(engine, code, stderr.join(""));
            }
            const message = parse(next.value);
            if (message?.env !== undefined) {
                return new Serve(child, lines, message.env, stderr);
            }
        }
    }
    static failedToStart(engine, code, stderr) {
        if (engine.source === "python3" && /No module named '?otel_replay/.test(stderr)) {
            return new OtelReplayError(MISSING_ENGINE);
        }
        const said = stderr
            .split("\n")
            .map((line) => line.trim())
            .filter((line) => line && !line.startsWith("otel-replay: 0 replayed"));
        const reason = said.at(-1) ?? `the engine exited with code ${code}`;
        return new OtelReplayError(reason.startsWith("otel-replay") ? reason : `otel-replay: ${reason}`);
    }
    /** Whether the engine has ended (or is ending): it takes no more `use` lines. */
    get ended() {
        return this.stopped !== null || this.child.exitCode !== null || this.child.signalCode !== null;
    }
    /** Let this process exit while the engine runs: the engine ends with it (its standard
     * input then ends), writing what its last cassette asked for. */
    unref() {
        this.child.unref();
        for (const stream of [this.child.stdin, this.child.stdout, this.child.stderr]) {
            stream?.unref?.();
        }
    }
    /** Point the running engine at another cassette (none: no cassette, strict, a model
     * call then is a miss): the `use` line of the `serve` protocol. Returns the previous
     * cassette's summary and the environment for the new one (the same port). */
    use(cassette, mode) {
        const asked = this.queue.then(() => this.ask(cassette, mode));
        this.queue = asked.then(() => undefined, () => undefined);
        return asked;
    }
    async ask(cassette, mode) {
        if (this.ended)
            throw new OtelReplayError("otel-replay: the engine has ended");
        this.child.stdin.write(`${useLine(cassette, mode)}\n`);
        for (;;) {
            const next = await this.lines.next();
            if (next.done) {
                const said = this.stderr.join("").trim().split("\n").at(-1) ?? "";
                throw new OtelReplayError(`otel-replay: the engine ended (exit ${this.child.exitCode}): ${said}`);
            }
            const message = parse(next.value);
            if (message?.used !== undefined) {
                const used = message.used;
                this.env = used.env;
                return used;
            }
            if (typeof message?.error === "string")
                throw new OtelReplayError(message.error);
        }
    }
    /** End the run (end of standard input) and return its summary. */
    stop(timeoutMs = 60_000) {
        this.stopped ??= this.finish(timeoutMs);
        return this.stopped;
    }
    async finish(timeoutMs) {
        const child = this.child;
        const exited = new Promise((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null)
                resolve();
            else
                child.once("close", () => resolve());
        });
        child.stdin.end();
        const timer = setTimeout(() => child.kill("SIGTERM"), timeoutMs);
        let summary;
        try {
            for (;;) {
                const next = await this.lines.next();
                if (next.done)
                    break;
                const message = parse(next.value);
                if (message?.summary !== undefined)
                    summary = message.summary;
            }
            await exited;
        }
        finally {
            clearTimeout(timer);
        }
        if (summary === undefined) {
            const said = this.stderr.join("").trim().split("\n").at(-1) ?? "";
            throw new OtelReplayError(`otel-replay: the engine ended without a summary (exit ${child.exitCode}): ${said}`);
        }
        return summary;
    }
}
/** The protocol's `use` line for `cassette` in `mode` (none: no cassette). */
export function useLine(cassette, mode) {
    return JSON.stringify({ use: cassette === undefined ? {} : { cassette, ...(mode ? { mode } : {}) } });
}
function parse(line) {
    if (!line.startsWith("{"))
        return null;
    try {
        const value = JSON.parse(line);
        return typeof value === "object" && value !== null ? value : null;
    }
    catch {
        return null;
    }
}
const layers = [];
/** Where the run-wide setup leaves the values its environment replaced, for the test
 * workers (which inherit its environment, not its memory). */
const OUTER = "OTEL_REPLAY_OUTER_ENV";
/** Where the run-wide setup hands the test workers the engines it started for them
 * (`pool.ts`): never passed on to an engine. */
export const ENGINES = "OTEL_REPLAY_ENGINES";
/** Set `env` in `process.env`; returns what puts the previous values back. */
export function applyEnv(env) {
    const previous = new Map();
    for (const [name, value] of Object.entries(env)) {
        previous.set(name, process.env[name] ?? null);
        process.env[name] = value;
    }
    layers.push(previous);
    return () => {
        layers.splice(layers.indexOf(previous), 1);
        for (const [name, value] of previous) {
            if (value === null)
                delete process.env[name];
            else
                process.env[name] = value;
        }
    };
}
/** Hand the values `env` replaced on to processes started from here (the test workers):
 * `callerEnv` there undoes them too. */
export function passOuterEnv(env, previous) {
    const outer = Object.fromEntries(Object.keys(env).map((name) => [name, previous[name] ?? null]));
    process.env[OUTER] = JSON.stringify(outer);
}
/** The environment as the caller had it before any gateway's was set: what an engine is
 * started with, so that its upstreams are the caller's own (`OPENAI_BASE_URL` …), never
 * another gateway. */
export function callerEnv() {
    const env = { ...process.env };
    const undo = (layer) => {
        for (const [name, value] of layer) {
            if (value === null)
                delete env[name];
            else
                env[name] = value;
        }
    };
    for (const layer of [...layers].reverse())
        undo(layer);
    const outer = env[OUTER];
    delete env[OUTER];
    delete env[ENGINES];
    if (outer) {
        try {
            undo(Object.entries(JSON.parse(outer)));
        }
        catch {
            // not ours: nothing to undo
        }
    }
    return env;
}
//# sourceMappingURL=engine.js.map