/** The engine: finding `otel-replay`, and running `otel-replay serve`.
 *
 * The `serve` protocol is the only thing shared with the engine: it prints one JSON line
 * `{"env": {...}}` once the gateway is ready (a request sent then is served as a warm one
 * is), switches cassettes at each line `{"use": {"cassette": PATH, "mode": MODE}}` on its
 * standard input (answered `{"used": {"summary": <the previous one's>, "env": {...}}}`, or
 * `{"error": "…"}`), serves until its standard input ends, then prints
 * `{"summary": {...}}` and exits. */

import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { createInterface } from "node:readline";

import type { Summary } from "./summary.js";

export const MODES = ["strict", "auto", "record", "off"] as const;
export type Mode = (typeof MODES)[number];

/** Thrown for a setting that cannot work: no engine, an unknown mode, a bad cassette. */
export class OtelReplayError extends Error {
  override name = "OtelReplayError";
}

/** A strict miss (or a failure to save) that fails the test, whatever the agent did with
 * the error its client got. */
export class ReplayMissError extends Error {
  override name = "ReplayMissError";
}

const MISSING_ENGINE =
  "otel-replay: no engine found; give one of: the enginePath option, " +
  "OTEL_REPLAY_BIN (the otel-replay command, or e.g. `.venv/bin/python -m otel_replay`), " +
  "or `otel-replay` on PATH (pip install otel-replay); `python3 -m otel_replay` was tried last";

export interface Engine {
  command: string;
  args: string[];
  /** Where the engine came from, for error messages. */
  source: string;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string, env: NodeJS.ProcessEnv): string | null {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (dir && executable(join(dir, name))) return join(dir, name);
  }
  return null;
}

/** A command as given: an existing file is the command itself (spaces and all),
 * otherwise words separated by spaces (`python3 -m otel_replay`). */
function words(given: string | readonly string[]): string[] {
  if (typeof given !== "string") return [...given];
  if (existsSync(given)) return [given];
  return given.trim().split(/\s+/).filter(Boolean);
}

/** The engine: `enginePath`, else `OTEL_REPLAY_BIN`, else `otel-replay` on PATH, else
 * `python3 -m otel_replay`. */
export function findEngine(
  enginePath?: string | readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Engine {
  const given: [string | readonly string[] | undefined, string][] = [
    [enginePath, "the enginePath option"],
    [env.OTEL_REPLAY_BIN, "OTEL_REPLAY_BIN"],
  ];
  for (const [value, source] of given) {
    if (value === undefined || value.length === 0) continue;
    const [command, ...args] = words(value);
    if (command === undefined) continue;
    return { command, args, source };
  }
  const installed = onPath("otel-replay", env);
  if (installed !== null) return { command: installed, args: [], source: "PATH" };
  const python = onPath("python3", env);
  if (python !== null) return { command: python, args: ["-m", "otel_replay"], source: "python3" };
  throw new OtelReplayError(MISSING_ENGINE);
}

/** The mode: the option, else `OTEL_REPLAY_MODE`, else `strict` when `CI` is set (and
 * not false-ish) and `auto` otherwise. */
export function resolveMode(option?: string, env: NodeJS.ProcessEnv = process.env): Mode {
  const ci = (env.CI ?? "").trim().toLowerCase();
  const fallback = ci && !["0", "false", "no"].includes(ci) ? "strict" : "auto";
  const chosen = option || env.OTEL_REPLAY_MODE || fallback;
  if (!(MODES as readonly string[]).includes(chosen)) {
    throw new OtelReplayError(
      `otel-replay: unknown mode ${JSON.stringify(chosen)}; use one of ${MODES.join(", ")}`,
    );
  }
  return chosen as Mode;
}

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
export function serveArgs(options: EngineOptions): string[] {
  const args: string[] = [];
  for (const [name, url] of Object.entries(options.upstreams ?? {})) {
    args.push(`--upstream-${name}`, url);
  }
  return args.concat(options.args ?? []);
}

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
export class Serve {
  /** The environment of the cassette in use. */
  env: Record<string, string>;
  private readonly child: ChildProcess;
  private readonly lines: AsyncIterator<string>;
  private readonly stderr: string[];
  private stopped: Promise<Summary> | null = null;
  private queue: Promise<void> = Promise.resolve(); // one `use` line at a time

  private constructor(
    child: ChildProcess,
    lines: AsyncIterator<string>,
    env: Record<string, string>,
    stderr: string[],
  ) {
    this.child = child;
    this.lines = lines;
    this.env = env;
    this.stderr = stderr;
  }

  /** Start the engine; resolves once its gateway is ready (its first line). */
  static start(options: ServeOptions): Promise<Serve> {
    return Serve.launch(options).ready;
  }

  /** Start the engine without waiting: its process id at once (undefined when it could
   * not be spawned), and the engine once its gateway is ready. */
  static launch(options: ServeOptions): { pid: number | undefined; ready: Promise<Serve> } {
    const { engine, mode } = options;
    const args = [...engine.args, "serve", "--mode", mode];
    if (options.cassette !== undefined) args.push("--cassette", options.cassette);
    args.push(...(options.args ?? []));
    const child = spawn(engine.command, args, {
      cwd: options.cwd,
      env: options.env ?? callerEnv(),
      stdio: ["pipe", "pipe", "pipe"],
    });
    return { pid: child.pid, ready: Serve.started(child, engine) };
  }

  private static async started(child: ChildProcess, engine: Engine): Promise<Serve> {
    const stderr: string[] = [];
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      stderr.push(chunk);
      if (stderr.length > 200) stderr.splice(0, stderr.length - 200);
    });
    child.stdin!.on("error", () => undefined); // the engine gone: its exit says why
    const spawned = new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
    try {
      await spawned;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (engine.source === "python3" || engine.source === "PATH" || code !== "ENOENT") {
        throw new OtelReplayError(`${MISSING_ENGINE} (${String(error)})`);
      }
      throw new OtelReplayError(
        `otel-replay: cannot run the engine ${JSON.stringify(engine.command)} from ` +
          `${engine.source}: ${String(error)}. ${MISSING_ENGINE}`,
      );
    }
    const lines = createInterface({ input: child.stdout!, crlfDelay: Infinity })[
      Symbol.asyncIterator
    ]();
    const exited = new Promise<number | null>((resolve) => child.once("close", resolve));
    for (;;) {
      const next = await lines.next();
      if (next.done) {
        const code = await exited;
        throw Serve.failedToStart(engine, code, stderr.join(""));
      }
      const message = parse(next.value);
      if (message?.env !== undefined) {
        return new Serve(child, lines, message.env as Record<string, string>, stderr);
      }
    }
  }

  private static failedToStart(engine: Engine, code: number | null, stderr: string): Error {
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
  get ended(): boolean {
    return this.stopped !== null || this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** Let this process exit while the engine runs: the engine ends with it (its standard
   * input then ends), writing what its last cassette asked for. */
  unref(): void {
    this.child.unref();
    for (const stream of [this.child.stdin, this.child.stdout, this.child.stderr]) {
      (stream as unknown as { unref?: () => void } | null)?.unref?.();
    }
  }

  /** Point the running engine at another cassette (none: no cassette, strict, a model
   * call then is a miss): the `use` line of the `serve` protocol. Returns the previous
   * cassette's summary and the environment for the new one (the same port). */
  use(cassette?: string, mode?: Mode): Promise<Used> {
    const asked = this.queue.then(() => this.ask(cassette, mode));
    this.queue = asked.then(
      () => undefined,
      () => undefined,
    );
    return asked;
  }

  private async ask(cassette?: string, mode?: Mode): Promise<Used> {
    if (this.ended) throw new OtelReplayError("otel-replay: the engine has ended");
    this.child.stdin!.write(`${useLine(cassette, mode)}\n`);
    for (;;) {
      const next = await this.lines.next();
      if (next.done) {
        const said = this.stderr.join("").trim().split("\n").at(-1) ?? "";
        throw new OtelReplayError(`otel-replay: the engine ended (exit ${this.child.exitCode}): ${said}`);
      }
      const message = parse(next.value);
      if (message?.used !== undefined) {
        const used = message.used as { summary: Summary; env: Record<string, string> };
        this.env = used.env;
        return used;
      }
      if (typeof message?.error === "string") throw new OtelReplayError(message.error);
    }
  }

  /** End the run (end of standard input) and return its summary. */
  stop(timeoutMs = 60_000): Promise<Summary> {
    this.stopped ??= this.finish(timeoutMs);
    return this.stopped;
  }

  private async finish(timeoutMs: number): Promise<Summary> {
    const child = this.child;
    const exited = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once("close", () => resolve());
    });
    child.stdin!.end();
    const timer = setTimeout(() => child.kill("SIGTERM"), timeoutMs);
    let summary: Summary | undefined;
    try {
      for (;;) {
        const next = await this.lines.next();
        if (next.done) break;
        const message = parse(next.value);
        if (message?.summary !== undefined) summary = message.summary as Summary;
      }
      await exited;
    } finally {
      clearTimeout(timer);
    }
    if (summary === undefined) {
      const said = this.stderr.join("").trim().split("\n").at(-1) ?? "";
      throw new OtelReplayError(
        `otel-replay: the engine ended without a summary (exit ${child.exitCode}): ${said}`,
      );
    }
    return summary;
  }
}

/** The protocol's `use` line for `cassette` in `mode` (none: no cassette). */
export function useLine(cassette?: string, mode?: Mode): string {
  return JSON.stringify({ use: cassette === undefined ? {} : { cassette, ...(mode ? { mode } : {}) } });
}

function parse(line: string): Record<string, unknown> | null {
  if (!line.startsWith("{")) return null;
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The values a gateway's environment replaced, by name (null: it was not set). */
type Layer = Map<string, string | null>;

const layers: Layer[] = [];

/** Where the run-wide setup leaves the values its environment replaced, for the test
 * workers (which inherit its environment, not its memory). */
const OUTER = "OTEL_REPLAY_OUTER_ENV";

/** Where the run-wide setup hands the test workers the engines it started for them
 * (`pool.ts`): never passed on to an engine. */
export const ENGINES = "OTEL_REPLAY_ENGINES";

/** Set `env` in `process.env`; returns what puts the previous values back. */
export function applyEnv(env: Record<string, string>): () => void {
  const previous: Layer = new Map();
  for (const [name, value] of Object.entries(env)) {
    previous.set(name, process.env[name] ?? null);
    process.env[name] = value;
  }
  layers.push(previous);
  return () => {
    layers.splice(layers.indexOf(previous), 1);
    for (const [name, value] of previous) {
      if (value === null) delete process.env[name];
      else process.env[name] = value;
    }
  };
}

/** Hand the values `env` replaced on to processes started from here (the test workers):
 * `callerEnv` there undoes them too. */
export function passOuterEnv(env: Record<string, string>, previous: NodeJS.ProcessEnv): void {
  const outer = Object.fromEntries(Object.keys(env).map((name) => [name, previous[name] ?? null]));
  process.env[OUTER] = JSON.stringify(outer);
}

/** The environment as the caller had it before any gateway's was set: what an engine is
 * started with, so that its upstreams are the caller's own (`OPENAI_BASE_URL` …), never
 * another gateway. */
export function callerEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  const undo = (layer: Iterable<[string, string | null]>): void => {
    for (const [name, value] of layer) {
      if (value === null) delete env[name];
      else env[name] = value;
    }
  };
  for (const layer of [...layers].reverse()) undo(layer);
  const outer = env[OUTER];
  delete env[OUTER];
  delete env[ENGINES];
  if (outer) {
    try {
      undo(Object.entries(JSON.parse(outer) as Record<string, string | null>));
    } catch {
      // not ours: nothing to undo
    }
  }
  return env;
}
