/** @anthropic-ai/sdk through the gateway, unmodified: Messages, plain and streamed, with a
 * tool loop. */

import Anthropic from "@anthropic-ai/sdk";
import type { MessageParam, Tool } from "@anthropic-ai/sdk/resources/messages";

import { recordThenReplay } from "./roundtrip.js";

process.env.ANTHROPIC_API_KEY = "sk-ant-test-key-for-the-stub";

const TOOLS: Tool[] = [
  {
    name: "weather",
    description: "the weather in a city",
    input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
];

async function agent(stream: boolean): Promise<string> {
  const client = new Anthropic(); // ANTHROPIC_BASE_URL: the gateway
  const messages: MessageParam[] = [{ role: "user", content: "Paris" }];
  for (let turn = 0; turn < 4; turn++) {
    const params = {
      model: "claude-sonnet-4-5",
      max_tokens: 256,
      system: "You answer briefly.",
      messages,
      tools: TOOLS,
    };
    const message = stream
      ? await client.messages.stream(params).finalMessage()
      : await client.messages.create(params);
    messages.push({ role: "assistant", content: message.content });
    const calls = message.content.filter((block) => block.type === "tool_use");
    if (!calls.length) {
      return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
    }
    messages.push({
      role: "user",
      content: calls.map((call) => ({
        type: "tool_result" as const,
        tool_use_id: call.id,
        content: `sunny in ${(call.input as { city: string }).city}`,
      })),
    });
  }
  throw new Error("no answer after 4 turns");
}

recordThenReplay("anthropic-sdk messages", 2, () => agent(false));
recordThenReplay("anthropic-sdk messages streamed", 2, () => agent(true));
