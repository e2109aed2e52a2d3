/** openai-node's Responses API WebSocket mode (`ResponsesWS`) through the gateway,
 * unmodified: two turns over one connection, the second continuing the first by
 * `previous_response_id`; and a changed prompt, which misses as the API's error event
 * and fails its test. Its Realtime client (`OpenAIRealtimeWS`), which dials wss:// only,
 * is served TLS on the gateway's port, its certificate trusted through
 * NODE_EXTRA_CA_CERTS (workers started after the run-wide setup's engine), or handed to
 * the client as `replay.ca` (a test's own `useReplay`, in a worker already running). */

import { readFileSync } from "node:fs";
import { join } from "node:path";

import OpenAI from "openai";
import { ResponsesWS } from "openai/resources/responses/ws";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

import { useReplay } from "otel-replay/vitest";

import { recordSuite, runSuite } from "./nested.js";
import { stubForFile, upstreams } from "./peers.js";
import { talk } from "./realtime.js";
import { recordThenReplay } from "./roundtrip.js";

process.env.OPENAI_API_KEY = "sk-test-key-for-the-stub";

/** One `response.create` and its events: the text, and the response's id. */
function turn(ws: ResponsesWS, input: string, previous?: string): Promise<[string, string]> {
  return new Promise((resolve, reject) => {
    let text = "";
    const onDelta = (event: { delta: string }) => {
      text += event.delta;
    };
    ws.on("response.output_text.delta", onDelta);
    ws.once("response.completed", (event) => {
      ws.off("response.output_text.delta", onDelta);
      resolve([text, event.response.id]);
    });
    ws.once("error", reject);
    ws.send({
      type: "response.create",
      model: "gpt-5.5",
      input,
      ...(previous ? { previous_response_id: previous } : {}),
    });
  });
}

recordThenReplay("openai-node responses websocket", 2, async () => {
  const ws = new ResponsesWS(new OpenAI()); // OPENAI_BASE_URL: the gateway, as ws://
  await new Promise<void>((open, fail) => {
    ws.socket.once("open", () => open());
    ws.socket.once("error", fail);
  });
  try {
    const [first, id] = await turn(ws, "hello");
    const [second] = await turn(ws, "and again", id);
    return `${first} | ${second}`;
  } finally {
    ws.close();
  }
});

const folder = stubForFile();

test("a changed prompt over the websocket misses, as the API's error, and fails its test", async () => {
  const stub = folder.stub();
  const recorded = await recordSuite("websocket.config.ts", folder.dir, stub.openai_url);
  expect(recorded.code, recorded.output).toBe(0);
  await stub.stop();
  const env = { CI: "true", OPENAI_API_KEY: "sk-test-key-for-the-stub" }; // strict
  const same = await runSuite("websocket.config.ts", folder.dir, env);
  expect(same.code, same.output).toBe(0);
  const changed = await runSuite("websocket.config.ts", folder.dir, { ...env, PROMPT: "Lyon" });
  expect(changed.code).toBe(1);
  expect(changed.output).toMatch(/websocket\.case\.ts > asks over a websocket: replay miss: messages changed/);
  const answers = readFileSync(join(folder.dir, "answers.txt"), "utf8").trim().split("\n");
  expect(answers).toHaveLength(3);
  expect(answers[0]).toBe("stub reply to: Paris");
  expect(answers[1]).toBe(answers[0]); // replayed
  expect(answers[2]).toMatch(/^error: .*replay miss: messages changed/);
});

describe("openai-node realtime over wss:// from a test's own useReplay", () => {
  const own = stubForFile();
  let recorded = "";
  // this worker started before the engine these tests start: the client is handed its CA
  beforeAll(() => {
    process.env.OTEL_REPLAY_TLS = "1";
  });
  afterAll(() => {
    delete process.env.OTEL_REPLAY_TLS;
  });

  test("records, the client given replay.ca", async () => {
    const upstream = upstreams(own.stub());
    const replay = await useReplay("realtime-own", { mode: "record", fixturesDir: own.dir, upstreams: upstream });
    expect(replay.ca).toContain("-----BEGIN CERTIFICATE-----");
    recorded = await talk("Paris", replay.ca);
    expect(recorded).toBe("stub reply to: Paris");
  });

  test("replays strictly with the provider stopped", async () => {
    await own.stub().stop();
    const replay = await useReplay("realtime-own", { mode: "strict", fixturesDir: own.dir });
    expect(await talk("Paris")).toMatch(/^error: .*certificate/); // not trusted as it started
    expect(await talk("Paris", replay.ca)).toBe(recorded);
  });
});

describe("openai-node realtime over wss://", () => {
  const own = stubForFile(); // a stub of its own: the test above stops the file's

  test("a realtime session over wss:// records, replays and misses a changed prompt", async () => {
    const stub = own.stub();
    const env = {
      OTEL_REPLAY_CASSETTE: join(own.dir, "realtime.json"),
      OPENAI_API_KEY: "sk-test-key-for-the-stub",
      OTEL_REPLAY_TLS: "1", // the engine gives the workers NODE_EXTRA_CA_CERTS
    };
    const recorded = await runSuite("realtime.config.ts", own.dir, {
      ...env,
      OTEL_REPLAY_MODE: "record",
      OPENAI_BASE_URL: stub.openai_url,
    });
    expect(recorded.code, recorded.output).toBe(0);
    expect(recorded.output).toContain("otel-replay: 0 replayed · 1 live · 0 misses");
    await stub.stop();
    const same = await runSuite("realtime.config.ts", own.dir, { ...env, CI: "1" });
    expect(same.code, same.output).toBe(0);
    expect(same.output).toContain("otel-replay: 1 replayed · 0 live · 0 misses");
    const changed = await runSuite("realtime.config.ts", own.dir, { ...env, CI: "1", PROMPT: "Lyon" });
    expect(changed.code, changed.output).not.toBe(0);
    expect(changed.output).toContain("(run): replay miss: messages changed");
    const answers = readFileSync(join(own.dir, "realtime.txt"), "utf8").trim().split("\n");
    expect(answers).toHaveLength(3);
    expect(answers[0]).toBe("stub reply to: Paris");
    expect(answers[1]).toBe(answers[0]); // replayed
    expect(answers[2]).toMatch(/^error: .*replay miss: messages changed/);
  });
});
