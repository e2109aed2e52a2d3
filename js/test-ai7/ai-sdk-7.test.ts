/** AI SDK 7's own telemetry as a fixture. Its OpenTelemetry integration (`@ai-sdk/otel`)
 * writes the GenAI semantic conventions (`chat {model}` spans with `gen_ai.input.messages`,
 * `gen_ai.system_instructions`, `gen_ai.tool.definitions`, `gen_ai.output.messages`), not
 * the `ai.*` attributes of AI SDK 4–6. An agent on OpenAI's Responses API and Chat
 * Completions and on Anthropic, `generateText` and `streamText` each running a tool loop,
 * exports its spans to the engine; `otel-replay build` makes a cassette of them that
 * replays the agent strictly with the provider stopped. (AI SDK 7 asks for Node 22 or
 * later in its `engines`; it runs on the Node 20 this package supports.) */

import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { OpenTelemetry } from "@ai-sdk/otel";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { generateText, isStepCount, streamText, tool, type LanguageModel, type TelemetryOptions } from "ai";
import { afterAll, expect, test } from "vitest";
import { z } from "zod";

import { scratch } from "../test/peers.js";
import { fromTelemetry, replayAll } from "../test/telemetry.js";

const folder = scratch();
afterAll(() => folder.remove());

const tools = {
  weather: tool({
    description: "the weather in a city",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => ({ city, sky: "sunny" }),
  }),
};

interface Models {
  responses: LanguageModel;
  chat: LanguageModel;
  anthropic: LanguageModel;
}

/** The agent: a tool loop on each model, the first generated, the others streamed. */
async function agent(models: Models, telemetry?: TelemetryOptions): Promise<string[]> {
  const settings = { system: "You answer briefly.", prompt: "Paris", tools, stopWhen: isStepCount(3), telemetry };
  const first = await generateText({ ...settings, model: models.responses });
  const second = await streamText({ ...settings, model: models.chat }).text;
  const third = await streamText({ ...settings, model: models.anthropic }).text;
  return [first.text, second, third];
}

function models(openaiURL?: string, anthropicURL?: string): Models {
  const openai = createOpenAI({ baseURL: openaiURL, apiKey: "sk-test-key-for-the-stub" });
  const anthropic = createAnthropic({ baseURL: anthropicURL, apiKey: "sk-ant-test-key-for-the-stub" });
  return {
    responses: openai("gpt-4o-mini"),
    chat: openai.chat("gpt-4o-mini"),
    anthropic: anthropic("claude-sonnet-4-5"),
  };
}

test("an AI SDK 7 run's GenAI telemetry builds a cassette that replays it", async () => {
  const { answer: live, cassette, doctor } = await fromTelemetry(folder.dir, "ai-sdk-7", async (stub, env) => {
    const exporter = new OTLPTraceExporter({ url: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT });
    const tracer = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    tracer.register();
    try {
      const telemetry = { integrations: [new OpenTelemetry()] };
      return await agent(models(stub.openai_url, `${stub.url}/v1`), telemetry);
    } finally {
      await tracer.shutdown();
    }
  });
  expect(live).toEqual(Array(3).fill('stub reply to: {"city":"Paris","sky":"sunny"}'));
  // the source is the integration's tracer; six calls, each read from the GenAI form
  expect(doctor).toContain("gen_ai: 6 model calls · 0 exactly · 6 semantically · 0 not replayable");
  expect(doctor).toContain(
    "compared only in what the trace's form expresses: bare-parts (1), system-placement (2)," +
      " tool-definitions (6), tool-results (3)",
  );
  await replayAll(cassette, 6);
  // the providers' own base URLs: OPENAI_BASE_URL and ANTHROPIC_BASE_URL, the gateway's
  expect(await agent(models())).toEqual(live);
});
