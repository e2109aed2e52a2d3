// Writes the AI SDK trace fixture of the Python tests (tests/traces/ai_sdk.jsonl): a small
// tool-using agent on each AI SDK provider the gateway serves, streamed and not, recorded
// through `otel-replay serve` against the stub upstream, its own telemetry exported to the
// same gateway. The file holds the gateway's spans (exact bodies) beside the AI SDK's.
//
//   OTEL_REPLAY_BIN=".venv/bin/python -m otel_replay" node js/scripts/ai-sdk-trace.mjs OUT.jsonl

import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

import { findEngine, Serve } from "../dist/index.js";

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
  args: ["--upstream-openai", urls.openai_url, "--upstream-anthropic", urls.url, "--traces", out],
});
const tracer = new NodeTracerProvider({
  spanProcessors: [
    new SimpleSpanProcessor(new OTLPTraceExporter({ url: serve.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT })),
  ],
});
tracer.register();
const openai = createOpenAI({ baseURL: serve.env.OPENAI_BASE_URL, apiKey: "sk-test" });
const anthropic = createAnthropic({ baseURL: serve.env.ANTHROPIC_BASE_URL, apiKey: "sk-ant-test" });
const tools = {
  weather: tool({
    description: "the weather in a city",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => ({ city, sky: "sunny" }),
  }),
};
const models = [openai.chat("gpt-4o-mini"), openai("gpt-4o-mini"), anthropic("claude-sonnet-4-5")];
for (const model of models) {
  for (const stream of [false, true]) {
    const settings = {
      model,
      system: "You answer briefly.",
      prompt: "Paris",
      tools,
      stopWhen: stepCountIs(3),
      experimental_telemetry: { isEnabled: true },
    };
    console.log(stream ? await streamText(settings).text : (await generateText(settings)).text);
  }
}
await tracer.forceFlush();
await tracer.shutdown();
await serve.stop();
stub.stdin.end();
