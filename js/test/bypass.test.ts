/** A model call that bypassed the gateway fails a strict replay: an AI SDK agent whose
 * telemetry reaches the engine, with a second provider built on a hard-coded `baseURL` (the
 * stub standing in for the provider). Its `ai.generateText.doGenerate` span shows a call no
 * gateway call answered; the same agent making its one call through the gateway passes. */

import { expect, test } from "vitest";

import { runSuite } from "./nested.js";
import { stubForFile } from "./peers.js";

const folder = stubForFile();
const KEY = { OPENAI_API_KEY: "sk-test-key-for-the-stub" };

test("an AI SDK call past the gateway fails strict replay and is named", async () => {
  const stub = folder.stub();
  const recorded = await runSuite("bypass.config.ts", folder.dir, {
    OTEL_REPLAY_MODE: "record",
    OPENAI_BASE_URL: stub.openai_url,
    ...KEY,
  });
  expect(recorded.code, recorded.output).toBe(0);
  expect(recorded.output).toContain("otel-replay: 0 replayed · 1 live · 0 misses");

  const through = await runSuite("bypass.config.ts", folder.dir, { CI: "true", ...KEY });
  expect(through.code, through.output).toBe(0);
  expect(through.tests.get("asks")?.status).toBe("passed");
  expect(through.output).toMatch(/otel-replay: 1 replayed · 0 live · 0 misses · \d+ spans received · 1 blocks/);
  expect(through.output).not.toContain("bypassed");

  const past = await runSuite("bypass.config.ts", folder.dir, { CI: "true", DIRECT: stub.openai_url, ...KEY });
  expect(past.code, past.output).toBe(1);
  expect(past.output).toMatch(
    /otel-replay: 1 replayed · 0 live · 0 misses · \d+ spans received · 1 model call bypassed the gateway · 1 blocks/,
  );
  const outcome = past.tests.get("asks");
  expect(outcome?.status, past.output).toBe("failed");
  expect(outcome?.failureMessages.join("\n")).toMatch(
    /otel-replay: model calls bypassed the gateway: openai call 'ai\.generateText\.doGenerate' \(span [0-9a-f]{16}\)\n/,
  );
});
