// What useReplay adds to a Vitest run, per test file: a suite of FILES test files is run
// bare (one trivial test each) and with `await useReplay(...)` in that test (a strict
// replay of an empty cassette: the engine started, its environment set, the engine
// stopped, its summary read), files one after another; the difference over FILES is the
// cost per file. Also the engine's own start (to its `env` line) and stop, timed alone.
// The engine's byte code is cached as in an installed package (in a temporary
// PYTHONPYCACHEPREFIX, after a warm-up start), whatever the caller's
// PYTHONDONTWRITEBYTECODE: otherwise each start compiles the package's modules again.
//
//   OTEL_REPLAY_BIN=".venv/bin/python -m otel_replay" node js/bench/startup.mjs [FILES] [RUNS]

import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { findEngine, Serve } from "../dist/index.js";

const JS = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const FILES = Number(process.argv[2] ?? 6);
const RUNS = Number(process.argv[3] ?? 3);

const EMPTY = JSON.stringify({ version: 2, source: {}, table: {}, interactions: [] });
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

function suite(withHelper) {
  const dir = mkdtempSync(join(JS, "bench", ".suite-"));
  mkdirSync(join(dir, "cassettes"));
  writeFileSync(join(dir, "vitest.config.mjs"), `export default { test: { include: ["*.test.mjs"] } };\n`);
  writeFileSync(join(dir, "cassettes", "empty.json"), EMPTY);
  for (let i = 0; i < FILES; i++) {
    const body = withHelper
      ? `import { useReplay } from "otel-replay/vitest";\n` +
        `test("t", async () => { await useReplay("empty", { mode: "strict" }); expect(process.env.OPENAI_BASE_URL).toBeTruthy(); });\n`
      : `test("t", async () => { expect(1).toBe(1); });\n`;
    writeFileSync(join(dir, `f${i}.test.mjs`), `import { expect, test } from "vitest";\n${body}`);
  }
  return dir;
}

function timeRun(dir) {
  const started = process.hrtime.bigint();
  const run = spawnSync(
    process.execPath,
    [join(JS, "node_modules/vitest/vitest.mjs"), "run", "--no-file-parallelism"],
    { cwd: dir, encoding: "utf8" },
  );
  if (run.status !== 0) throw new Error(run.stdout + run.stderr);
  return Number(process.hrtime.bigint() - started) / 1e6;
}

async function warmUp() {
  const dir = mkdtempSync(join(tmpdir(), "otel-replay-bench-"));
  writeFileSync(join(dir, "empty.json"), EMPTY);
  const serve = await Serve.start({ engine: findEngine(), cassette: join(dir, "empty.json"), mode: "strict" });
  await new Promise((resolve) => setTimeout(resolve, 2000)); // its server built: all imported
  await serve.stop();
  rmSync(dir, { recursive: true, force: true });
}

async function engineAlone() {
  const dir = mkdtempSync(join(tmpdir(), "otel-replay-bench-"));
  const cassette = join(dir, "empty.json");
  writeFileSync(cassette, EMPTY);
  const starts = [];
  const stops = [];
  for (let i = 0; i < RUNS * 2; i++) {
    const t0 = performance.now();
    const serve = await Serve.start({ engine: findEngine(), cassette, mode: "strict" });
    const t1 = performance.now();
    await serve.stop();
    starts.push(t1 - t0);
    stops.push(performance.now() - t1);
  }
  rmSync(dir, { recursive: true, force: true });
  return { start: median(starts), stop: median(stops) };
}

const pycache = mkdtempSync(join(tmpdir(), "otel-replay-pycache-"));
process.env.PYTHONPYCACHEPREFIX = pycache; // the engines started from here inherit it
delete process.env.PYTHONDONTWRITEBYTECODE;
const bare = suite(false);
const helped = suite(true);
try {
  await warmUp();
  const bareTimes = [];
  const helpedTimes = [];
  for (let i = 0; i < RUNS; i++) {
    bareTimes.push(timeRun(bare));
    helpedTimes.push(timeRun(helped));
  }
  const engine = await engineAlone();
  const perFile = (median(helpedTimes) - median(bareTimes)) / FILES;
  console.log(`vitest run, ${FILES} files one after another (median of ${RUNS}):`);
  console.log(`  bare          ${median(bareTimes).toFixed(0)} ms`);
  console.log(`  useReplay     ${median(helpedTimes).toFixed(0)} ms`);
  console.log(`  added per file ${perFile.toFixed(0)} ms (goal ≤ 150 ms)`);
  console.log(`engine alone: start to its env line ${engine.start.toFixed(0)} ms, stop to its summary ${engine.stop.toFixed(0)} ms`);
} finally {
  rmSync(bare, { recursive: true, force: true });
  rmSync(helped, { recursive: true, force: true });
  rmSync(pycache, { recursive: true, force: true });
}
