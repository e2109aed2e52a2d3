/** The globalSetup form: one engine for the run serves a provider made at import, and
 * the end of the run prints the summary the pytest plugin prints. */

import { readFileSync } from "node:fs";
import { join } from "node:path";

import { expect, test } from "vitest";

import { runSuite } from "./nested.js";
import { stubForFile } from "./peers.js";

const folder = stubForFile();

test("a provider made at import is recorded, then replayed strictly", async () => {
  const stub = folder.stub();
  const env = {
    OTEL_REPLAY_CASSETTE: join(folder.dir, "run.json"),
    OPENAI_API_KEY: "sk-test-key-for-the-stub",
  };
  const recorded = await runSuite("setup.config.ts", folder.dir, {
    ...env,
    OTEL_REPLAY_MODE: "record",
    OPENAI_BASE_URL: stub.openai_url,
  });
  expect(recorded.code, recorded.output).toBe(0);
  expect(recorded.output).toContain("otel-replay: 0 replayed · 2 live · 0 misses");
  // each call in its own cassette: the test's engine went to the provider, not the run's
  const interactions = (file: string) =>
    (JSON.parse(readFileSync(join(folder.dir, file), "utf8")) as { interactions: unknown[] }).interactions;
  expect(interactions("run.json")).toHaveLength(1);
  expect(interactions("own.json")).toHaveLength(1);
  await stub.stop();

  const replayed = await runSuite("setup.config.ts", folder.dir, { ...env, CI: "1" });
  expect(replayed.code, replayed.output).toBe(0);
  expect(replayed.tests.get("a provider made at import")?.status).toBe("passed");
  expect(replayed.tests.get("a test's own cassette beside the run's")?.status).toBe("passed");
  expect(replayed.output).toMatch(/otel-replay: 2 replayed · 0 live · 0 misses · \d+ spans? received · 2 blocks/);

  const changed = await runSuite("setup.config.ts", folder.dir, { ...env, CI: "1", PROMPT: "Lyon" });
  expect(changed.code, changed.output).not.toBe(0);
  expect(changed.output).toContain("(run): replay miss: messages changed");
});
