/** An agent's own telemetry as a fixture: a run's spans, exported over OTLP to a gateway
 * that only receives them, build a cassette (`otel-replay build`) that replays the run
 * strictly with the provider stopped. The AI SDK's spans, and the OpenInference
 * instrumentation of openai-node (which names no `llm.provider` for a local base URL). */

import { spawn } from "node:child_process";
import { join } from "node:path";

import { createAnthropic } from "@ai-sdk/anthropic";
import { OpenAIInstrumentation } from "@arizeai/openinference-instrumentation-openai";
import { createOpenAI } from "@ai-sdk/openai";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { generateText, stepCountIs, streamText, tool, type LanguageModel } from "ai";
import OpenAI from "openai";
import { afterAll, expect, onTestFinished, test } from "vitest";
import { z } from "zod";

import { findEngine, Serve } from "otel-replay";
import { useReplay, type Replay } from "otel-replay/vitest";

import { pythonEnv, scratch, startStub, type Stub } from "./peers.js";

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

/** Run `live` against the stub with its spans exported to a gateway that only receives
 * them (the agent calls the provider itself); stop the stub; build a cassette from the
 * spans. Returns what `live` returned, the cassette and what `doctor` says of the spans. */
async function fromTelemetry<T>(
  name: string,
  live: (stub: Stub, tracer: NodeTracerProvider) => Promise<T>,
): Promise<{ answer: T; cassette: string; doctor: string }> {
  const stub = await startStub();
  const traces = join(folder.dir, `${name}.jsonl`);
  const receiver = await Serve.start({
    engine: findEngine(),
    mode: "record",
    cassette: join(folder.dir, `${name}-unused.json`),
    args: ["--traces", traces],
  });
  const tracer = new NodeTracerProvider({
    spanProcessors: [
      new SimpleSpanProcessor(new OTLPTraceExporter({ url: receiver.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT })),
    ],
  });
  const answer = await live(stub, tracer);
  await tracer.shutdown();
  const received = await receiver.stop();
  expect(received.spans_received).toBeGreaterThan(0);
  await stub.stop();
  const cassette = join(folder.dir, `${name}.json`);
  const engine = findEngine();
  const built = await run(engine.command, [...engine.args, "build", traces, "-o", cassette, "--quiet"]);
  expect(built.code, built.output).toBe(0);
  const doctor = await run(engine.command, [...engine.args, "doctor", traces]);
  return { answer, cassette, doctor: doctor.output };
}

/** Replay `cassette` strictly for this test; at its end, `calls` replayed and no miss. */
async function replayAll(cassette: string, calls: number): Promise<void> {
  let replay: Replay | undefined;
  onTestFinished(() => {
    expect(replay?.summary?.replayed).toBe(calls);
    expect(replay?.summary?.misses).toEqual([]);
  });
  replay = await useReplay(cassette, { mode: "strict" });
}

test("an AI SDK run's telemetry builds a cassette that replays it", async () => {
  const { answer: live, cassette, doctor } = await fromTelemetry("ai-sdk", async (stub, tracer) => {
    tracer.register();
    return await agent(
      createOpenAI({ baseURL: stub.openai_url, apiKey: "sk-test-key-for-the-stub" })("gpt-4o-mini"),
      createAnthropic({ baseURL: `${stub.url}/v1`, apiKey: "sk-ant-test-key-for-the-stub" })("claude-sonnet-4-5"),
      true,
    );
  });
  expect(doctor).toContain("ai: 4 model calls · 0 exactly · 4 semantically · 0 not replayable");
  await replayAll(cassette, 4);
  process.env.OPENAI_API_KEY = "sk-test-key-for-the-stub";
  process.env.ANTHROPIC_API_KEY = "sk-ant-test-key-for-the-stub";
  const replayed = await agent(createOpenAI()("gpt-4o-mini"), createAnthropic()("claude-sonnet-4-5"), false);
  expect(replayed).toEqual(live);
});

/** openai-node asked twice: a tool call, then a streamed answer. */
async function openaiAgent(client: OpenAI): Promise<string[]> {
  const tools = [
    {
      type: "function" as const,
      function: { name: "weather", parameters: { type: "object", properties: { city: { type: "string" } } } },
    },
  ];
  const first = await client.chat.completions.create({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "Paris" }],
    tools,
  });
  const stream = await client.chat.completions.create({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "Hello there" }],
    stream: true,
  });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
  return [JSON.stringify(first.choices[0]!.message.tool_calls), text];
}

test("openai-node's OpenInference telemetry builds a cassette that replays it", async () => {
  const { answer: live, cassette, doctor } = await fromTelemetry("openinference", async (stub, tracer) => {
    const instrumentation = new OpenAIInstrumentation();
    instrumentation.setTracerProvider(tracer);
    instrumentation.manuallyInstrument(OpenAI);
    try {
      return await openaiAgent(new OpenAI({ baseURL: stub.openai_url, apiKey: "sk-test-key-for-the-stub" }));
    } finally {
      instrumentation.disable();
    }
  });
  expect(doctor).toMatch(/openinference-instrumentation-openai \S+: 2 model calls · 1 exactly · 1 semantically/);
  await replayAll(cassette, 2);
  process.env.OPENAI_API_KEY = "sk-test-key-for-the-stub";
  expect(await openaiAgent(new OpenAI())).toEqual(live);
});
