/** The three outcomes: in auto mode, a changed prompt with no key of the provider set
 * cannot go live, so its test is skipped as not evaluated (`not evaluated: replay miss:
 * …`), the run's section counting them; `OTEL_REPLAY_STRICT=1` fails it instead. */

import { expect, test } from "vitest";

import { recordSuite, runSuite } from "./nested.js";
import { stubForFile } from "./peers.js";

const folder = stubForFile();
const KEYLESS = { OTEL_REPLAY_MODE: "auto", OPENAI_API_KEY: "", CI: "", PROMPT: "Lyon" };
const NAMES = ["asks", "asks, expected to fail"];

test("a keyless auto miss is not evaluated, and OTEL_REPLAY_STRICT=1 fails it", async () => {
  const recorded = await recordSuite("miss.config.ts", folder.dir, folder.stub().openai_url);
  expect(recorded.code, recorded.output).toBe(0);

  const verbose = ["--reporter=verbose"]; // shows each skipped test with its reason
  const keyless = await runSuite("miss.config.ts", folder.dir, { ...KEYLESS, OTEL_REPLAY_STRICT: "" }, verbose);
  expect(keyless.code, keyless.output).toBe(0);
  for (const name of NAMES) expect(keyless.tests.get(name)?.status, keyless.output).toBe("skipped");
  expect(keyless.output).toContain("0 replayed · 0 live · 2 misses · 0 spans received · 2 blocks · 2 not evaluated");
  expect(keyless.output).toMatch(/not evaluated: replay miss: messages changed \(hash \w+→\w+\)/);

  const strict = await runSuite("miss.config.ts", folder.dir, { ...KEYLESS, OTEL_REPLAY_STRICT: "1" });
  expect(strict.code).toBe(1);
  for (const name of NAMES) {
    const outcome = strict.tests.get(name);
    expect(outcome?.status, strict.output).toBe("failed");
    expect(outcome?.failureMessages.join("\n")).toMatch(/replay miss: messages changed/);
  }
  expect(strict.output).not.toContain("not evaluated");
});
