import { expect, test } from "vitest";

import { useReplay } from "otel-replay/vitest";

import { planTrip, planTripStreamed } from "./agent.js";

// replays need no key; recording against a real provider takes yours
process.env.OPENAI_API_KEY ??= "sk-example-not-a-real-key";
process.env.ANTHROPIC_API_KEY ??= "sk-ant-example-not-a-real-key";

test("plans a day in Lisbon", async () => {
  await useReplay("lisbon"); // cassettes/lisbon.json
  const answer = await planTrip("Lisbon");
  expect(answer).toContain("sunny");
});

test("plans a day in Oslo, streamed", async () => {
  await useReplay("oslo");
  const answer = await planTripStreamed("Oslo");
  expect(answer).toContain("sunny");
});
