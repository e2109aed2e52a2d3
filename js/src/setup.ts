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

import { resolve } from "node:path";

import {
  applyEnv,
  findEngine,
  passOuterEnv,
  ReplayMissError,
  resolveMode,
  Serve,
  serveArgs,
  type EngineOptions,
} from "./engine.js";
import { startPool, workerCount, type Pool } from "./pool.js";
import { explained, failure, META_KEY, runSection, type Block } from "./summary.js";

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
  config: { root: string; maxWorkers?: number | string; fileParallelism?: boolean; watch?: boolean };
  vitest?: { state?: { getFiles(): Task[]; getPaths?(): string[] } };
}

function testBlocks(project: Project): Block[] {
  const blocks: Block[] = [];
  const visit = (task: Task): void => {
    const found = task.meta?.[META_KEY];
    if (Array.isArray(found)) blocks.push(...(found as Block[]));
    for (const child of task.tasks ?? []) visit(child);
  };
  for (const file of project.vitest?.state?.getFiles() ?? []) visit(file);
  return blocks;
}

/** The engines for the run's workers (`pool.ts`); none when the engine cannot be found
 * (each `useReplay` then says so). */
async function workers(project: Project, options: SetupOptions): Promise<Pool | null> {
  let engine;
  try {
    engine = findEngine(options.enginePath);
  } catch {
    return null;
  }
  const count = workerCount(project.config, project.vitest?.state?.getPaths?.().length ?? 0);
  return startPool(count, engine, serveArgs(options), "strict");
}

/** A `globalSetup` function with these settings. */
export function replaySetup(options: SetupOptions = {}) {
  return async function setup(project: Project): Promise<() => Promise<void>> {
    const root = project.config?.root ?? process.cwd();
    const mode = resolveMode(options.mode);
    const cassette = resolve(
      root,
      options.cassette ?? process.env.OTEL_REPLAY_CASSETTE ?? "cassettes/run.json",
    );
    const args = serveArgs(options);
    const withWorkers = mode !== "off" && options.workerEngines !== false;
    const pool = withWorkers ? await workers(project, options) : null;
    const serve =
      mode === "off" || options.cassette === null
        ? null
        : await Serve.start({ engine: findEngine(options.enginePath), cassette, mode, args });
    // set before the test workers start, so they inherit it
    const env = serve?.env ?? {};
    const before = { ...process.env };
    const restore = applyEnv(env);
    passOuterEnv(env, before);
    return async function teardown(): Promise<void> {
      restore();
      delete process.env.OTEL_REPLAY_OUTER_ENV;
      const blocks = testBlocks(project);
      let problem: string | null = null;
      for (const left of (await pool?.stop()) ?? []) {
        // a block a worker left open (it ended mid-test, failing the run): shown all the same
        if (left.replayed || left.live || left.misses.length || left.write_errors.length) {
          const where = left.cassette ?? "(none)";
          blocks.push({ test: "(a worker's engine)", cassette: where, mode: left.mode, summary: left });
        }
      }
      if (serve !== null) {
        const summary = await serve.stop();
        if (summary.spans_received || summary.replayed || summary.live || summary.misses.length) {
          blocks.unshift({ test: "(run)", cassette, mode, summary });
        }
        problem = failure(summary);
      }
      if (blocks.length) {
        const lines = runSection(blocks, "mixed");
        process.stdout.write(`\n otel-replay \n${lines.join("\n")}\n`);
      }
      if (problem !== null) {
        process.exitCode = 1;
        const error = new ReplayMissError(explained(problem, cassette));
        error.stack = `${error.name}: ${error.message}`; // where it was thrown says nothing
        throw error;
      }
    };
  };
}

export default replaySetup();
