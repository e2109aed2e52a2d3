/** An agent's own telemetry as a fixture: a run's spans, exported over OTLP to a gateway
 * that only receives them, build a cassette (`otel-replay build`) that replays the run
 * strictly with the provider stopped. The AI SDK's spans, and the OpenInference
 * instrumentation of openai-node (which names no `llm.provider` for a local base URL). */

import { createAnthropic } from "@ai-sdk/anthropic";
import { OpenAIInstrumentation } from "@arizeai/openinference-instrumentation-openai";
import { createOpenAI } from "@ai-sdk/openai";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { generateText, stepCountIs, streamText, tool, type LanguageModel } from "ai";
import OpenAI from "openai";
import { afterAll, expect, test } from "vitest";
import { z } from "zod";

import { scratch, type Stub } from "./peers.js";
import { fromTelemetry, replayAll } from "./telemetry.js";

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

/** The spans of `live`, exported by a tracer provider of the test's own to the engine. */
function traced<T>(
  name: string,
  live: (stub: Stub, tracer: NodeTracerProvider) => Promise<T>,
): ReturnType<typeof fromTelemetry<T>> {
  return fromTelemetry(folder.dir, name, async (stub, env) => {
    const exporter = new OTLPTraceExporter({ url: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT });
    const tracer = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    try {
      return await live(stub, tracer);
    } finally {
      await tracer.shutdown();
    }
  });
}

test("an AI SDK run's telemetry builds a cassette that replays it", async () => {
  const { answer: live, cassette, doctor } = await traced("ai-sdk", async (stub, tracer) => {
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
  const { answer: live, cassette, doctor } = await traced("openinference", async (stub, tracer) => {
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
