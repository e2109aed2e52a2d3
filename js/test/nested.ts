/** Running a Vitest suite in a subprocess, as a user would, to see how its tests end. */

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { JS, pythonEnv } from "./peers.js";

export interface Outcome {
  code: number | null;
  output: string;
  /** Each test's full name: its status and failure messages. */
  tests: Map<string, { status: string; failureMessages: string[] }>;
}

/** Record a suite's cassettes from a stub upstream at `openaiUrl` (a key for it set). */
export async function recordSuite(config: string, scratchDir: string, openaiUrl: string): Promise<Outcome> {
  return runSuite(config, scratchDir, {
    OTEL_REPLAY_MODE: "record",
    OPENAI_BASE_URL: openaiUrl,
    OPENAI_API_KEY: "sk-test-key-for-the-stub",
  });
}

export async function runSuite(
  config: string,
  scratchDir: string,
  env: Record<string, string>,
  extra: readonly string[] = [],
): Promise<Outcome> {
  const report = join(scratchDir, `report-${Date.now()}.json`);
  const vitest = join(JS, "node_modules/vitest/vitest.mjs");
  const args = [vitest, "run", "--config", join(JS, "test/fixtures", config)];
  args.push("--reporter=json", `--outputFile=${report}`, "--reporter=default", ...extra);
  const child = spawn(process.execPath, args, {
    cwd: JS,
    env: { ...pythonEnv(), CASSETTES: scratchDir, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const code = await new Promise<number | null>((done) => child.once("close", done));
  const tests = new Map<string, { status: string; failureMessages: string[] }>();
  try {
    const json = JSON.parse(readFileSync(report, "utf8")) as {
      testResults: { assertionResults: { fullName: string; status: string; failureMessages: string[] }[] }[];
    };
    for (const file of json.testResults) {
      for (const test of file.assertionResults) tests.set(test.fullName, test);
    }
  } catch {
    // no report: the output says why
  }
  return { code, output, tests };
}
