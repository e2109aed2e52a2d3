/** Finding the engine, the mode and the cassette; and the one-line errors when a setting
 * cannot work. */

import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { afterAll, describe, expect, test } from "vitest";

import { cassettePath, findEngine, resolveMode, Serve } from "otel-replay";

import { scratch } from "./peers.js";

const folder = scratch();
afterAll(() => folder.remove());

/** A folder on PATH holding executables named `names`, each running `script`. */
function pathWith(names: string[], script: string): string {
  const dir = join(folder.dir, `bin-${names.join("-") || "none"}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(dir);
  for (const name of names) {
    writeFileSync(join(dir, name), `#!/bin/sh\n${script}\n`);
    chmodSync(join(dir, name), 0o755);
  }
  return dir;
}

describe("the engine", () => {
  const both = pathWith(["otel-replay", "python3"], "exit 0");
  const python = pathWith(["python3"], "exit 0");

  test("is enginePath, else OTEL_REPLAY_BIN, else otel-replay on PATH, else python3 -m otel_replay", () => {
    const env = { PATH: both, OTEL_REPLAY_BIN: "/opt/venv/bin/python -m otel_replay" };
    expect(findEngine(["/x/otel-replay"], env)).toMatchObject({ command: "/x/otel-replay", args: [] });
    expect(findEngine(undefined, env)).toMatchObject({
      command: "/opt/venv/bin/python",
      args: ["-m", "otel_replay"],
      source: "OTEL_REPLAY_BIN",
    });
    expect(findEngine(undefined, { PATH: both })).toMatchObject({ command: join(both, "otel-replay") });
    expect(findEngine(undefined, { PATH: python })).toMatchObject({
      command: join(python, "python3"),
      args: ["-m", "otel_replay"],
    });
  });

  test("missing is one error naming the three ways to give one", async () => {
    const ways = /enginePath option.*OTEL_REPLAY_BIN.*`otel-replay` on PATH/;
    expect(() => findEngine(undefined, { PATH: pathWith([], "") })).toThrow(ways);
    // python3 without the otel_replay module: the same error, not Python's
    const bare = pathWith(["python3"], 'echo "python3: No module named otel_replay" >&2; exit 1');
    const engine = findEngine(undefined, { PATH: bare });
    await expect(Serve.start({ engine, mode: "strict" })).rejects.toThrow(ways);
    // a given engine that is not there: named, with the three ways
    const missing = { command: join(folder.dir, "nowhere"), args: [], source: "the enginePath option" };
    await expect(Serve.start({ engine: missing, mode: "strict" })).rejects.toThrow(/nowhere.*OTEL_REPLAY_BIN/s);
  });

  test("a cassette that cannot be read is the engine's own one-line error", async () => {
    const engine = findEngine();
    const absent = join(folder.dir, "absent.json");
    await expect(Serve.start({ engine, mode: "strict", cassette: absent })).rejects.toThrow(
      `otel-replay: ${absent}: no such cassette; record it first (--mode record)`,
    );
    const broken = join(folder.dir, "broken.json");
    writeFileSync(broken, "{broken");
    await expect(Serve.start({ engine, mode: "strict", cassette: broken })).rejects.toThrow(
      new RegExp(`^otel-replay: ${broken} at line 1: invalid JSON`),
    );
  });
});

test("the mode is the option, else OTEL_REPLAY_MODE, else strict under CI, else auto", () => {
  expect(resolveMode("record", { OTEL_REPLAY_MODE: "off", CI: "1" })).toBe("record");
  expect(resolveMode(undefined, { OTEL_REPLAY_MODE: "off", CI: "1" })).toBe("off");
  expect(resolveMode(undefined, { CI: "true" })).toBe("strict");
  expect(resolveMode(undefined, { CI: "false" })).toBe("auto");
  expect(resolveMode(undefined, {})).toBe("auto");
  expect(() => resolveMode("replay", {})).toThrow('otel-replay: unknown mode "replay"; use one of strict, auto, record, off');
});

test("a name is a cassette in the folder beside the test; a path is used as given", () => {
  const test = "/suite/agent.test.ts";
  expect(cassettePath("paris", test)).toBe("/suite/cassettes/paris.json");
  expect(cassettePath("paris", test, "fixtures")).toBe("/suite/fixtures/paris.json");
  expect(cassettePath("/elsewhere/x.json", test)).toBe("/elsewhere/x.json");
  expect(() => cassettePath("../../etc/x", test)).toThrow(/escapes the cassette folder/);
});

describe("one engine, cassette after cassette", () => {
  test("a use line switches it and answers the previous cassette's summary", async () => {
    const empty = JSON.stringify({ version: 2, source: {}, table: {}, interactions: [] });
    const [a, b] = ["a.json", "b.json"].map((name) => join(folder.dir, name));
    writeFileSync(a!, empty);
    writeFileSync(b!, empty);
    const serve = await Serve.start({ engine: findEngine(), cassette: a, mode: "strict" });
    try {
      const port = serve.env.OPENAI_BASE_URL;
      const used = await serve.use(b, "strict");
      expect(used.summary.cassette).toBe(a);
      expect(used.env.OPENAI_BASE_URL).toBe(port);
      // a cassette that cannot be used: the error, and the engine still serves b
      await expect(serve.use(join(folder.dir, "none.json"), "strict")).rejects.toThrow(
        /no such cassette/,
      );
      expect((await serve.use()).summary.cassette).toBe(b);
    } finally {
      const last = await serve.stop();
      expect(last.cassette).toBeNull();
    }
  });
});
