/** An agent's own telemetry as a fixture: the agent calls the stub provider itself and
 * exports its spans over OTLP to an engine that only receives them; `otel-replay build`
 * makes a cassette of the spans, and `replayAll` replays it strictly. */

import { spawn } from "node:child_process";
import { join } from "node:path";

import { expect, onTestFinished } from "vitest";

import { findEngine, Serve } from "otel-replay";
import { useReplay, type Replay } from "otel-replay/vitest";

import { pythonEnv, startStub, type Stub } from "./peers.js";

/** A command's exit code and its stdout and stderr together. */
export async function run(command: string, args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(command, args, { env: pythonEnv(), stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const code = await new Promise<number | null>((done) => child.once("close", done));
  return { code, output };
}

/** Run `live` against the stub with the environment of an engine that receives its spans
 * (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; the agent calls the provider itself); stop the
 * stub; build a cassette in `dir` from the spans. Returns what `live` returned, the
 * cassette, the trace file and what `doctor` says of it. `live` ends its exporter before
 * it returns. */
export async function fromTelemetry<T>(
  dir: string,
  name: string,
  live: (stub: Stub, env: Record<string, string>) => Promise<T>,
): Promise<{ answer: T; cassette: string; traces: string; doctor: string }> {
  const stub = await startStub();
  const traces = join(dir, `${name}.jsonl`);
  const receiver = await Serve.start({
    engine: findEngine(),
    mode: "record",
    cassette: join(dir, `${name}-unused.json`),
    args: ["--traces", traces],
  });
  const answer = await live(stub, receiver.env);
  const received = await receiver.stop();
  expect(received.spans_received).toBeGreaterThan(0);
  await stub.stop();
  const cassette = join(dir, `${name}.json`);
  const engine = findEngine();
  const built = await run(engine.command, [...engine.args, "build", traces, "-o", cassette, "--quiet"]);
  expect(built.code, built.output).toBe(0);
  const doctor = await run(engine.command, [...engine.args, "doctor", traces]);
  return { answer, cassette, traces, doctor: doctor.output };
}

/** Replay `cassette` strictly for this test; at its end, `calls` replayed and no miss. */
export async function replayAll(cassette: string, calls: number): Promise<Replay> {
  let replay: Replay | undefined;
  onTestFinished(() => {
    expect(replay?.summary?.replayed).toBe(calls);
    expect(replay?.summary?.misses).toEqual([]);
  });
  replay = await useReplay(cassette, { mode: "strict" });
  return replay;
}
