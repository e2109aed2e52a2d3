/** The peers the tests start: the engine from this repository and a stub upstream that
 * stands in for the providers (`python -m otel_replay.testing.stub`). */

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";

import { afterAll, beforeAll } from "vitest";
import { fileURLToPath } from "node:url";

export const JS = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const REPO = resolve(JS, "..");

/** The Python that runs the engine and the stub: OTEL_REPLAY_PYTHON, else the repo's venv. */
export const PYTHON =
  process.env.OTEL_REPLAY_PYTHON ??
  (existsSync(join(REPO, ".venv/bin/python")) ? join(REPO, ".venv/bin/python") : "python3");

/** The engine the tests use: OTEL_REPLAY_BIN, else this repository's. */
export const ENGINE = process.env.OTEL_REPLAY_BIN ?? `${PYTHON} -m otel_replay`;
process.env.OTEL_REPLAY_BIN = ENGINE;
delete process.env.CI; // the tests choose their modes themselves
delete process.env.OTEL_REPLAY_MODE;

/** Python's environment: this repository first on the path (the engine under test). */
export function pythonEnv(): NodeJS.ProcessEnv {
  const path = process.env.PYTHONPATH;
  return { ...process.env, PYTHONPATH: path ? `${REPO}:${path}` : REPO };
}
process.env.PYTHONPATH = pythonEnv().PYTHONPATH;

export interface Stub {
  url: string;
  openai_url: string;
  anthropic_url: string;
  stop(): Promise<void>;
}

/** A stub upstream (the provider) on a free loopback port; stop() ends it. */
export async function startStub(): Promise<Stub> {
  const child: ChildProcess = spawn(PYTHON, ["-m", "otel_replay.testing.stub"], {
    env: pythonEnv(),
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done) throw new Error("the stub upstream did not start");
  const closed = new Promise<void>((done) => child.once("close", () => done()));
  return {
    ...JSON.parse(first.value),
    async stop() {
      child.stdin!.end();
      await closed;
    },
  };
}

/** A temporary folder for cassettes and traces; remove() deletes it. */
export function scratch(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "otel-replay-js-"));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The upstream options for a record run against the stub. */
export function upstreams(stub: Stub): Record<string, string> {
  return { openai: stub.openai_url, anthropic: stub.anthropic_url, gemini: stub.url };
}

/** A stub upstream and a scratch folder for the tests of this file: started before them,
 * stopped and removed after them. `stub()` is the running stub. */
export function stubForFile(): { stub(): Stub; dir: string } {
  let running: Stub | undefined;
  const folder = scratch();
  beforeAll(async () => {
    running = await startStub();
  });
  afterAll(async () => {
    await running?.stop();
    folder.remove();
  });
  return {
    stub: () => {
      if (running === undefined) throw new Error("the stub is started before the tests");
      return running;
    },
    dir: folder.dir,
  };
}
