/** The AI SDK's providers through the gateway, unmodified: `@ai-sdk/openai` (Responses and
 * Chat), `@ai-sdk/anthropic` (which posts to `${ANTHROPIC_BASE_URL}/messages`) and
 * `@ai-sdk/google` (which reads no base URL from the environment: it is given the Gemini
 * API's, `${GOOGLE_GEMINI_BASE_URL}/v1beta`), with `generateText` and `streamText` running
 * a tool loop. */

import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, stepCountIs, streamText, tool, type LanguageModel } from "ai";
import { z } from "zod";

import { recordThenReplay } from "./roundtrip.js";

process.env.OPENAI_API_KEY = "sk-test-key-for-the-stub";
process.env.ANTHROPIC_API_KEY = "sk-ant-test-key-for-the-stub";
process.env.GOOGLE_GENERATIVE_AI_API_KEY = "AIza-test-key-for-the-stub";

const tools = {
  weather: tool({
    description: "the weather in a city",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => `sunny in ${city}`,
  }),
};

async function agent(model: LanguageModel, stream: boolean): Promise<string> {
  const settings = { model, system: "You answer briefly.", prompt: "Paris", tools, stopWhen: stepCountIs(4) };
  if (stream) return await streamText(settings).text;
  return (await generateText(settings)).text;
}

// the providers are made in the test, after useReplay set their base URLs
const openai = () => createOpenAI();
const anthropic = () => createAnthropic();
const google = () => createGoogleGenerativeAI({ baseURL: `${process.env.GOOGLE_GEMINI_BASE_URL}/v1beta` });

recordThenReplay("ai-sdk openai responses", 2, () => agent(openai()("gpt-4o-mini"), false));
recordThenReplay("ai-sdk openai responses streamed", 2, () => agent(openai()("gpt-4o-mini"), true));
recordThenReplay("ai-sdk openai chat streamed", 2, () => agent(openai().chat("gpt-4o-mini"), true));
recordThenReplay("ai-sdk anthropic", 2, () => agent(anthropic()("claude-sonnet-4-5"), false));
recordThenReplay("ai-sdk anthropic streamed", 2, () => agent(anthropic()("claude-sonnet-4-5"), true));
recordThenReplay("ai-sdk google", 2, () => agent(google()("gemini-2.5-flash"), false));
recordThenReplay("ai-sdk google streamed", 2, () => agent(google()("gemini-2.5-flash"), true));
