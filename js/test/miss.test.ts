/** A changed prompt fails its test, also when the agent swallows the error and also under
 * `it.fails`: a miss is never an expected failure. */

import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";

import { expect, test } from "vitest";

import { recordSuite, runSuite } from "./nested.js";
import { stubForFile } from "./peers.js";

const folder = stubForFile();

test("a changed prompt fails its test, it.fails included", async () => {
  const stub = folder.stub();
  const recorded = await recordSuite("miss.config.ts", folder.dir, stub.openai_url);
  expect(recorded.code, recorded.output).toBe(0);
  await stub.stop();

  const engines = join(folder.dir, "engines.txt");
  rmSync(engines, { force: true });
  const same = await runSuite("miss.config.ts", folder.dir, {
    CI: "true", // strict
    OPENAI_API_KEY: "sk-test-key-for-the-stub",
  });
  expect(same.code, same.output).toBe(0);
  expect(same.tests.get("asks")?.status).toBe("passed");
  expect(same.tests.get("asks, expected to fail")?.status).toBe("passed");
  expect(same.output).toContain("otel-replay: 2 replayed · 0 live · 0 misses · 0 spans received · 2 blocks");
  // one engine served both tests, switched from one cassette to the other
  const urls = readFileSync(engines, "utf8").trim().split("\n");
  expect(urls).toHaveLength(2);
  expect(new Set(urls).size).toBe(1);

  const changed = await runSuite("miss.config.ts", folder.dir, {
    CI: "true",
    OPENAI_API_KEY: "sk-test-key-for-the-stub",
    PROMPT: "Lyon",
  });
  expect(changed.code).toBe(1);
  // the end of the run: the pytest plugin's summary, each miss with its test
  expect(changed.output).toContain("otel-replay: 0 replayed · 0 live · 2 misses · 0 spans received · 2 blocks");
  expect(changed.output).toMatch(/miss\.case\.ts > asks: replay miss: messages changed/);
  for (const name of ["asks", "asks, expected to fail"]) {
    const outcome = changed.tests.get(name);
    expect(outcome?.status, changed.output).toBe("failed");
    expect(outcome?.failureMessages.join("\n")).toMatch(/replay miss: messages changed \(hash \w+→\w+\)/);
    expect(outcome?.failureMessages.join("\n")).toContain("otel-replay why --cassette");
  }
});
