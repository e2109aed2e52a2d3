/** openai-node through the gateway, unmodified: Chat Completions, plain and streamed,
 * with a tool loop; and the Responses API. */

import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";

import { recordThenReplay } from "./roundtrip.js";

process.env.OPENAI_API_KEY = "sk-test-key-for-the-stub";

const TOOLS: ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "weather",
      description: "the weather in a city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  },
];

function weather(args: string): string {
  return `sunny in ${(JSON.parse(args) as { city: string }).city}`;
}

/** Ask, run the tools the model calls, ask again: until the model answers in text. */
async function chatAgent(stream: boolean): Promise<string> {
  const client = new OpenAI(); // OPENAI_BASE_URL: the gateway
  const messages: ChatCompletionMessageParam[] = [
    { role: "system", content: "You answer briefly." },
    { role: "user", content: "Paris" },
  ];
  for (let turn = 0; turn < 4; turn++) {
    const params = { model: "gpt-4o-mini", messages, tools: TOOLS };
    const message = stream
      ? await client.chat.completions.stream(params).finalMessage()
      : (await client.chat.completions.create(params)).choices[0]!.message;
    messages.push(message as ChatCompletionMessageParam);
    const calls = message.tool_calls ?? [];
    if (!calls.length) return message.content ?? "";
    for (const call of calls) {
      if (call.type !== "function") continue;
      messages.push({ role: "tool", tool_call_id: call.id, content: weather(call.function.arguments) });
    }
  }
  throw new Error("no answer after 4 turns");
}

recordThenReplay("openai-node chat", 2, () => chatAgent(false));
recordThenReplay("openai-node chat streamed", 2, () => chatAgent(true));

recordThenReplay("openai-node responses", 1, async () => {
  const client = new OpenAI();
  const response = await client.responses.create({ model: "gpt-4o-mini", input: "Hello there" });
  return response.output_text;
});
