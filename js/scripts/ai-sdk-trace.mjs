// Writes the AI SDK trace fixtures of the Python tests (tests/traces/ai_sdk*.jsonl): a small
// tool-using agent on each AI SDK provider the gateway serves, streamed and not, recorded
// through `otel-replay serve` against the stub upstream, its own telemetry exported to the
// same gateway. The file holds the gateway's spans (exact bodies) beside the AI SDK's.
//
//   OTEL_REPLAY_BIN=".venv/bin/python -m otel_replay" node js/scripts/ai-sdk-trace.mjs OUT.jsonl
//
// It runs against the AI SDK installed where it is run from: js/ (AI SDK 6), js/test-ai7/
// (AI SDK 7, whose telemetry is its OpenTelemetry integration, `@ai-sdk/otel`, writing the
// GenAI semantic conventions: copy this script there), or a folder with AI SDK 4 and this
// package installed (`npm install ai@4.3.19 @ai-sdk/openai@1.3.24 @ai-sdk/anthropic@1.2.12
// zod@3.25.76 @opentelemetry/sdk-trace-node@2.12.1 @opentelemetry/exporter-trace-otlp-http@0.223.1
// path/to/js`, then copy this script there).

import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import * as ai from "ai";
import { z } from "zod";

import { findEngine, Serve } from "otel-replay";

const { generateText, streamText, tool } = ai;
// AI SDK 5 on: `inputSchema` and `stopWhen`; AI SDK 4: `parameters` and `maxSteps`
const modern = typeof ai.stepCountIs === "function";
const steps = modern ? { stopWhen: ai.stepCountIs(3) } : { maxSteps: 3 };
const schema = (value) => (modern ? { inputSchema: value } : { parameters: value });

const out = process.argv[2];
const engine = findEngine();
const stub = spawn(engine.command, [...engine.args.slice(0, -1), "otel_replay.testing.stub"], {
  stdio: ["pipe", "pipe", "inherit"],
});
const urls = JSON.parse((await createInterface({ input: stub.stdout })[Symbol.asyncIterator]().next()).value);
const serve = await Serve.start({
  engine,
  mode: "record",
  cassette: join(mkdtempSync(join(tmpdir(), "ai-sdk-")), "unused.json"),
  args: [
    ...["--upstream-openai", urls.openai_url, "--upstream-anthropic", urls.url],
    ...["--upstream", `gemini=${urls.url}`, "--traces", out],
  ],
});
const tracer = new NodeTracerProvider({
  spanProcessors: [
    new SimpleSpanProcessor(new OTLPTraceExporter({ url: serve.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT })),
  ],
});
tracer.register();
const seven = typeof ai.registerTelemetry === "function";
if (seven) {
  // AI SDK 7: telemetry is an integration registered with the SDK
  const { OpenTelemetry } = await import("@ai-sdk/otel");
  ai.registerTelemetry(new OpenTelemetry());
}
const openai = createOpenAI({ baseURL: serve.env.OPENAI_BASE_URL, apiKey: "sk-test" });
const anthropic = createAnthropic({ baseURL: serve.env.ANTHROPIC_BASE_URL, apiKey: "sk-ant-test" });
const tools = {
  weather: tool({
    description: "the weather in a city",
    ...schema(z.object({ city: z.string() })),
    execute: async ({ city }) => ({ city, sky: "sunny" }),
  }),
};
// (AI SDK 4's Responses model asks for fields the stub's Responses answers leave out)
const models = [openai.chat("gpt-4o-mini"), anthropic("claude-sonnet-4-5")];
if (modern) models.splice(1, 0, openai.responses("gpt-4o-mini"));
// AI SDK 7's Google provider (AI SDK 6's sends the tool schemas converted to OpenAPI's
// dialect, which its spans do not hold: those calls are not rebuilt from them)
if (seven) {
  const { createGoogle } = await import("@ai-sdk/google");
  const baseURL = `${serve.env.GOOGLE_GEMINI_BASE_URL}/v1beta`;
  models.push(createGoogle({ baseURL, apiKey: "AIza-test" })("gemini-2.5-flash"));
}
for (const model of models) {
  for (const stream of [false, true]) {
    const settings = {
      model,
      system: "You answer briefly.",
      prompt: "Paris",
      tools,
      ...steps,
      experimental_telemetry: { isEnabled: true },
    };
    if (stream) {
      let text = "";
      for await (const chunk of streamText(settings).textStream) text += chunk;
      console.log(text);
    } else {
      console.log((await generateText(settings)).text);
    }
  }
}
await tracer.forceFlush();
await tracer.shutdown();
await serve.stop();
stub.stdin.end();
