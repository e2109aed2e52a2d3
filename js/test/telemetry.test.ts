/** The AI SDK's own telemetry as a fixture: a run's spans, exported over OTLP to a
 * gateway that only receives them, build a cassette (`otel-replay build`) that replays
 * the run strictly with the provider stopped. */

import { spawn } from "node:child_process";
import { join } from "node:path";

import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { generateText, stepCountIs, streamText, tool, type LanguageModel } from "ai";
import { afterAll, expect, onTestFinished, test } from "vitest";
import { z } from "zod";

import { findEngine, Serve } from "otel-replay";
import { useReplay, type Replay } from "otel-replay/vitest";

import { pythonEnv, scratch, startStub } from "./peers.js";

const folder = scratch();
afterAll(() => folder.remove());

const tools = {
  weather: tool({
    description: "the weather in a city",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => ({ city, sky: "sunny" }),
  }),
};

/** A tool-using agent on two providers: OpenAI's Responses API, then Anthropic streamed. */
async function agent(openai: LanguageModel, anthropic: LanguageModel, telemetry: boolean): Promise<string[]> {
  const settings = {
    system: "You answer briefly.",
    prompt: "Paris",
    tools,
    stopWhen: stepCountIs(3),
    experimental_telemetry: { isEnabled: telemetry },
  };
  const first = await generateText({ ...settings, model: openai });
  const second = await streamText({ ...settings, model: anthropic }).text;
  return [first.text, second];
}

async function run(command: string, args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(command, args, { env: pythonEnv(), stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const code = await new Promise<number | null>((done) => child.once("close", done));
  return { code, output };
}

test("an AI SDK run's telemetry builds a cassette that replays it", async () => {
  const stub = await startStub();
  const traces = join(folder.dir, "traces.jsonl");
  // a gateway that only receives the agent's telemetry: the agent calls the provider itself
  const receiver = await Serve.start({
    engine: findEngine(),
    mode: "record",
    cassette: join(folder.dir, "unused.json"),
    args: ["--traces", traces],
  });
  const tracer = new NodeTracerProvider({
    spanProcessors: [
      new SimpleSpanProcessor(new OTLPTraceExporter({ url: receiver.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT })),
    ],
  });
  tracer.register();
  const live = await agent(
    createOpenAI({ baseURL: stub.openai_url, apiKey: "sk-test-key-for-the-stub" })("gpt-4o-mini"),
    createAnthropic({ baseURL: `${stub.url}/v1`, apiKey: "sk-ant-test-key-for-the-stub" })("claude-sonnet-4-5"),
    true,
  );
  await tracer.shutdown();
  const received = await receiver.stop();
  expect(received.spans_received).toBeGreaterThan(4);
  await stub.stop();

  const cassette = join(folder.dir, "from-telemetry.json");
  const engine = findEngine();
  const built = await run(engine.command, [...engine.args, "build", traces, "-o", cassette, "--quiet"]);
  expect(built.code, built.output).toBe(0);
  const doctor = await run(engine.command, [...engine.args, "doctor", traces]);
  expect(doctor.output).toContain("ai: 4 model calls · 0 exactly · 4 semantically · 0 not replayable");

  let replay: Replay | undefined;
  onTestFinished(() => {
    expect(replay?.summary?.replayed).toBe(4);
    expect(replay?.summary?.misses).toEqual([]);
  });
  replay = await useReplay(cassette, { mode: "strict" });
  process.env.OPENAI_API_KEY = "sk-test-key-for-the-stub";
  process.env.ANTHROPIC_API_KEY = "sk-ant-test-key-for-the-stub";
  const replayed = await agent(createOpenAI()("gpt-4o-mini"), createAnthropic()("claude-sonnet-4-5"), false);
  expect(replayed).toEqual(live);
});
