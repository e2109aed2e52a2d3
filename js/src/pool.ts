/** Engines that outlive a test file: the run's setup starts one per Vitest worker slot
 * (`VITEST_POOL_ID`, from 1 to the number of workers, handed from file to file) without
 * waiting for it, and hands the workers its port and the token of its control route in
 * `OTEL_REPLAY_ENGINES`. A worker's first `useReplay` switches its slot's engine by the
 * control route (`POST /_otel_replay/use`: the `serve` protocol's `use` line over HTTP,
 * since only the setup holds the engine's standard input) instead of starting one; the
 * worker's engines (`engines.ts`) then keep it from test to test. An engine whose
 * settings differ from the setup's (another engine command, other upstreams or options,
 * another environment) is never taken: such a test starts its own, as without the setup. */

import { createHash, randomBytes } from "node:crypto";
import { Agent, request } from "node:http";
import { createServer } from "node:net";
import { availableParallelism } from "node:os";

import {
  callerEnv,
  ENGINES,
  OtelReplayError,
  Serve,
  useLine,
  type Engine,
  type Mode,
  type Used,
} from "./engine.js";
import type { Summary } from "./summary.js";

/** What `OTEL_REPLAY_ENGINES` holds. */
interface Handoff {
  token: string;
  /** The settings the engines were started with (`settingsKey`). */
  key: string;
  /** By pool id: the engine's port and process id. */
  engines: Record<string, { port: number; pid: number }>;
}

/** What Vitest sets in a worker's environment and not in the setup's: left out when the
 * two environments are compared. */
const WORKER_ONLY = new Set([
  "VITEST_POOL_ID",
  "VITEST_WORKER_ID",
  "VITEST_MODE",
  "FORCE_TTY",
  "TEST",
  "VITEST",
  "NODE_ENV",
  "SSR", // Vite's, set in a worker by Vitest 4
]);

/** One string for an engine's settings: its command, its `serve` options and the
 * environment it is started with (what Vitest adds to a worker's left out). */
export function settingsKey(engine: Engine, args: readonly string[], env: NodeJS.ProcessEnv): string {
  const kept = Object.entries(env)
    .filter(([name]) => !WORKER_ONLY.has(name))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const digest = createHash("sha256").update(JSON.stringify(kept)).digest("hex");
  return JSON.stringify([engine.command, engine.args, args, digest]);
}

// -- the setup's side ---------------------------------------------------------------------

/** The engines the setup started; `stop()` ends them and returns their last summaries
 * (a block a worker left open when it ended mid-test). */
export interface Pool {
  stop(): Promise<Summary[]>;
}

/** A free loopback port (closed again: the engine binds it). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done, fail) => {
    server.once("error", fail);
    server.listen(0, "127.0.0.1", done);
  });
  const address = server.address();
  await new Promise<void>((done) => server.close(() => done()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** Start `count` engines without waiting for them and hand them to the test workers
 * (set in this process's environment, which the workers inherit). */
export async function startPool(
  count: number,
  engine: Engine,
  args: readonly string[],
  mode: Mode,
): Promise<Pool> {
  const env = callerEnv();
  const handoff: Handoff = {
    token: randomBytes(24).toString("hex"),
    key: settingsKey(engine, args, env),
    engines: {},
  };
  const started: Promise<Serve | null>[] = [];
  for (let id = 1; id <= count; id++) {
    const port = await freePort();
    const { pid, ready } = Serve.launch({
      engine,
      mode,
      args: [...args, "--port", String(port)],
      env: { ...env, OTEL_REPLAY_CONTROL: handoff.token },
    });
    // one that does not start: its worker starts its own, whose error the test then shows
    started.push(ready.catch(() => null));
    if (pid !== undefined) handoff.engines[String(id)] = { port, pid };
  }
  process.env[ENGINES] = JSON.stringify(handoff);
  return {
    async stop(): Promise<Summary[]> {
      delete process.env[ENGINES];
      const engines = (await Promise.all(started)).filter((s): s is Serve => s !== null);
      const summaries = await Promise.all(engines.map((s) => s.stop().catch(() => null)));
      return summaries.filter((s): s is Summary => s !== null);
    },
  };
}

/** How many engines a run's workers can use: Vitest's number of workers (`maxWorkers`,
 * else one less than the cores, half of them in watch mode), at most one per test file. */
export function workerCount(
  config: { maxWorkers?: number | string; fileParallelism?: boolean; watch?: boolean } | undefined,
  files: number,
): number {
  const given = Number(config?.maxWorkers);
  const cores = availableParallelism();
  let workers = Number.isInteger(given) && given > 0 ? given : Math.max(cores - 1, 1);
  if (!(given > 0) && config?.watch) workers = Math.max(Math.floor(cores / 2), 1);
  if (config?.fileParallelism === false) workers = 1;
  return files > 0 ? Math.min(workers, files) : workers;
}

// -- a worker's side ----------------------------------------------------------------------

/** An engine switched by its control route. */
export interface Switchable {
  readonly env: Record<string, string>;
  readonly ended: boolean;
  use(cassette?: string, mode?: Mode): Promise<Used>;
}

const CLAIMED = Symbol.for("otel-replay.claimed");
const globals = globalThis as unknown as Record<symbol, Set<string> | undefined>;
const claimed: Set<string> = (globals[CLAIMED] ??= new Set());

/** The setup's engine of this worker's slot, when there is one with settings `key` and
 * this process has not taken it yet; null otherwise. */
export function claim(key: string, env: NodeJS.ProcessEnv = process.env): Switchable | null {
  let handoff: Handoff;
  try {
    handoff = JSON.parse(env[ENGINES] ?? "null") as Handoff;
  } catch {
    return null;
  }
  const id = env.VITEST_POOL_ID;
  const entry = id === undefined ? undefined : handoff?.engines?.[id];
  if (entry === undefined || handoff.key !== key || claimed.has(id!)) return null;
  claimed.add(id!);
  return new Remote(entry.port, entry.pid, handoff.token);
}

const agent = new Agent({ keepAlive: true }); // idle sockets do not keep the worker alive
const RETRY_MS = 5;
const START_MS = 60_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The setup's engine, as this worker sees it: `use` lines sent to its control route. */
class Remote implements Switchable {
  env: Record<string, string> = {};
  ended = false;

  constructor(
    private readonly port: number,
    private readonly pid: number,
    private readonly token: string,
  ) {}

  async use(cassette?: string, mode?: Mode): Promise<Used> {
    if (this.ended) throw new OtelReplayError("otel-replay: the engine has ended");
    const line = useLine(cassette, mode);
    const deadline = Date.now() + START_MS;
    let answer: { status: number; body: string };
    for (;;) {
      try {
        answer = await this.post(line);
        break;
      } catch (error) {
        // not listening yet (still starting), while its process runs: ask again shortly
        const refused = (error as NodeJS.ErrnoException).code === "ECONNREFUSED";
        if (refused && alive(this.pid) && Date.now() < deadline) {
          await new Promise((done) => setTimeout(done, RETRY_MS));
          continue;
        }
        this.ended = true;
        throw new OtelReplayError(`otel-replay: the run's engine cannot be reached: ${String(error)}`);
      }
    }
    let message: { used?: Used; error?: string } = {};
    try {
      message = JSON.parse(answer.body) as typeof message;
    } catch {
      // not the engine's answer: below
    }
    if (answer.status === 200 && message.used !== undefined) {
      this.env = message.used.env;
      return message.used;
    }
    if (answer.status === 400 && typeof message.error === "string") {
      throw new OtelReplayError(message.error); // the cassette cannot be used: the engine can
    }
    this.ended = true; // another process on its port, or one that refuses the token
    const said = answer.body.slice(0, 200);
    throw new OtelReplayError(`otel-replay: the run's engine answered ${answer.status}: ${said}`);
  }

  /** The line POSTed to the control route (by `node:http`: a mock or spy a test puts on
   * `fetch` never sees these requests). */
  private post(line: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const sent = request(
        {
          host: "127.0.0.1",
          port: this.port,
          method: "POST",
          path: "/_otel_replay/use",
          agent,
          headers: {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(line),
            "x-otel-replay-token": this.token,
          },
        },
        (response) => {
          let body = "";
          response.setEncoding("utf8");
          response.on("data", (chunk: string) => (body += chunk));
          response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
          response.on("error", reject);
        },
      );
      sent.on("error", reject);
      // a port some other server took meanwhile, which never answers
      sent.setTimeout(START_MS, () => sent.destroy(new Error("no answer")));
      sent.end(line);
    });
  }
}
