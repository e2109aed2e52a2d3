/** AI SDK 7's own telemetry as a fixture. Its OpenTelemetry integration (`@ai-sdk/otel`)
 * writes the GenAI semantic conventions (`chat {model}` spans with `gen_ai.input.messages`,
 * `gen_ai.system_instructions`, `gen_ai.tool.definitions`, `gen_ai.output.messages`), or
 * with `LegacyOpenTelemetry` the `ai.*` attributes of AI SDK 4–6. An agent on OpenAI's
 * Responses API and Chat Completions, on Anthropic and on the Gemini API, `generateText`
 * and `streamText` each running a tool loop, exports its spans to the engine;
 * `otel-replay build` makes a cassette of them that replays the agent strictly with the
 * provider stopped. (AI SDK 7 asks for Node 22 or later in its `engines`; it runs on the
 * Node 20 this package supports.) */

import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogle } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";
import { LegacyOpenTelemetry, OpenTelemetry } from "@ai-sdk/otel";
import type { Tracer } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { generateText, isStepCount, streamText, tool, type LanguageModel, type Telemetry } from "ai";
import { afterAll, expect, test } from "vitest";
import { z } from "zod";

import { scratch, type Stub } from "../test/peers.js";
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
  google: LanguageModel;
}

/** The agent: a tool loop on each model, generated or streamed; Gemini's when asked. */
async function agent(models: Models, gemini: boolean, telemetry?: Telemetry): Promise<string[]> {
  const settings = {
    system: "You answer briefly.",
    prompt: "Paris",
    tools,
    stopWhen: isStepCount(3),
    telemetry: telemetry && { integrations: [telemetry] },
  };
  const first = await generateText({ ...settings, model: models.responses });
  const second = await streamText({ ...settings, model: models.chat }).text;
  const third = await streamText({ ...settings, model: models.anthropic }).text;
  if (!gemini) return [first.text, second, third];
  const fourth = await generateText({ ...settings, model: models.google });
  return [first.text, second, third, fourth.text];
}

/** The models, on the given base URLs; by default the providers' own settings (OpenAI's
 * and Anthropic's read their base URL from the environment; Google's is given the
 * gateway's Gemini base, which it does not read). */
function models(urls: { openai?: string; anthropic?: string; gemini?: string } = {}): Models {
  const openai = createOpenAI({ baseURL: urls.openai, apiKey: "sk-test-key-for-the-stub" });
  const anthropic = createAnthropic({ baseURL: urls.anthropic, apiKey: "sk-ant-test-key-for-the-stub" });
  const gemini = urls.gemini ?? process.env.GOOGLE_GEMINI_BASE_URL;
  const google = createGoogle({ baseURL: `${gemini}/v1beta`, apiKey: "AIza-test-key-for-the-stub" });
  return {
    responses: openai("gpt-4o-mini"),
    chat: openai.chat("gpt-4o-mini"),
    anthropic: anthropic("claude-sonnet-4-5"),
    google: google("gemini-2.5-flash"),
  };
}

/** The agent against the stub, its spans written by `integration` (made with a tracer of
 * the test's own, exporting to the engine), built into a cassette. */
function traced(name: string, gemini: boolean, integration: (tracer: Tracer) => Telemetry) {
  return fromTelemetry(folder.dir, name, async (stub: Stub, env) => {
    const exporter = new OTLPTraceExporter({ url: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT });
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    try {
      const urls = { openai: stub.openai_url, anthropic: `${stub.url}/v1`, gemini: stub.url };
      return await agent(models(urls), gemini, integration(provider.getTracer(name)));
    } finally {
      await provider.shutdown();
    }
  });
}

const ANSWER = 'stub reply to: {"city":"Paris","sky":"sunny"}';

test("an AI SDK 7 run's GenAI telemetry builds a cassette that replays it", async () => {
  // the integration's own tracer name, `gen_ai`, is the source doctor names
  const run = await traced("gen_ai", true, (tracer) => new OpenTelemetry({ tracer }));
  // (the Gemini provider wraps a tool's result as {name, content})
  const gemini = 'stub reply to: {"name": "weather", "content": {"city": "Paris", "sky": "sunny"}}';
  expect(run.answer).toEqual([ANSWER, ANSWER, ANSWER, gemini]);
  expect(run.doctor).toContain("gen_ai: 8 model calls · 0 exactly · 8 semantically · 0 not replayable");
  expect(run.doctor).toContain(
    "compared only in what the trace's form expresses: bare-parts (1), system-placement (2)," +
      " tool-definitions (8), tool-results (4)",
  );
  await replayAll(run.cassette, 8);
  // the gateway's base URLs: OPENAI_BASE_URL, ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL
  expect(await agent(models(), true)).toEqual(run.answer);
});

test("an AI SDK 7 run's legacy ai.* telemetry builds a cassette that replays it", async () => {
  const run = await traced("ai", false, (tracer) => new LegacyOpenTelemetry({ tracer }));
  expect(run.answer).toEqual([ANSWER, ANSWER, ANSWER]);
  expect(run.doctor).toContain("ai: 6 model calls · 0 exactly · 6 semantically · 0 not replayable");
  await replayAll(run.cassette, 6);
  expect(await agent(models(), false)).toEqual(run.answer);
});
