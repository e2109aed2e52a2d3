/** The engines the run's setup starts for its workers: two test files, run in turn by two
 * worker processes of one slot, are served by the one engine the setup started for it;
 * a miss in one file fails that file's test only; tests that overlap in a worker
 * (`describe.concurrent`) each get an engine of their own. */

import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";

import { expect, test } from "vitest";

import { recordSuite, runSuite } from "./nested.js";
import { stubForFile } from "./peers.js";

const folder = stubForFile();

interface Note {
  test: string;
  pid: number;
  url: string;
  slot: number | null;
}

function notes(): Map<string, Note> {
  const lines = readFileSync(join(folder.dir, "pool.txt"), "utf8").trim().split("\n");
  rmSync(join(folder.dir, "pool.txt"));
  return new Map(lines.map((line) => JSON.parse(line) as Note).map((note) => [note.test, note]));
}

const port = (url: string): number => Number(new URL(url).port);

test("two files share the setup's engine; a miss fails its own test only", async () => {
  const recorded = await recordSuite("pool.config.ts", folder.dir, folder.stub().openai_url);
  expect(recorded.code, recorded.output).toBe(0);
  expect(recorded.output).toMatch(/otel-replay: 0 replayed · 2 live · 0 misses · 0 spans received · .*4 blocks/);
  notes();

  const changed = await runSuite("pool.config.ts", folder.dir, {
    CI: "true", // strict
    OPENAI_API_KEY: "sk-test-key-for-the-stub",
    PROMPT: "Oslo", // file b asks something else
  });
  expect(changed.code).toBe(1);
  expect(changed.tests.get("a asks")?.status, changed.output).toBe("passed");
  const b = changed.tests.get("b asks");
  expect(b?.status, changed.output).toBe("failed");
  expect(b?.failureMessages.join("\n")).toMatch(/replay miss: messages changed/);
  expect(changed.output).toContain("otel-replay: 1 replayed · 0 live · 1 miss · 0 spans received · 4 blocks");

  const seen = notes();
  const [a, bNote, c1, c2] = ["a asks", "b asks", "c1", "c2"].map((name) => seen.get(name)!);
  // two worker processes, one after the other in slot 1, served by the setup's engine
  expect(a!.pid).not.toBe(bNote!.pid);
  expect(a!.slot).not.toBeNull();
  expect(port(a!.url)).toBe(a!.slot);
  expect(port(bNote!.url)).toBe(a!.slot);
  // overlapping tests: one has the slot's engine, the other one of its own
  expect(new Set([c1!.url, c2!.url]).size).toBe(2);
  expect([port(c1!.url), port(c2!.url)]).toContain(a!.slot);
});
