// A small travel agent on the AI SDK: it checks the weather with a tool, then answers.

import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

const SYSTEM = "You are a travel assistant. Check the weather before you answer.";

const tools = {
  get_weather: tool({
    description: "The weather forecast for a city",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => ({ city, forecast: "sunny", high_c: 24 }),
  }),
};

/** Plan a day in `city` with OpenAI (the provider is made here, so it reads
 * OPENAI_BASE_URL as the test set it). */
export async function planTrip(city: string): Promise<string> {
  const openai = createOpenAI();
  const { text } = await generateText({
    model: openai("gpt-4o-mini"),
    system: SYSTEM,
    prompt: city,
    tools,
    stopWhen: stepCountIs(4),
  });
  return text;
}

/** The same with Claude, streamed. */
export async function planTripStreamed(city: string): Promise<string> {
  const anthropic = createAnthropic();
  const result = streamText({
    model: anthropic("claude-sonnet-4-5"),
    system: SYSTEM,
    prompt: city,
    tools,
    stopWhen: stepCountIs(4),
  });
  return await result.text;
}
