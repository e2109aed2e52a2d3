/** @google/genai through the gateway, unmodified (it reads GOOGLE_GEMINI_BASE_URL): the
 * Gemini API's generateContent with a function-calling loop, and a streamed answer. */

import { GoogleGenAI, Type, type Content, type FunctionDeclaration } from "@google/genai";

import { recordThenReplay } from "./roundtrip.js";

process.env.GEMINI_API_KEY = "AIza-test-key-for-the-stub";

const WEATHER: FunctionDeclaration = {
  name: "weather",
  description: "the weather in a city",
  parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ["city"] },
};

async function agent(): Promise<string> {
  const ai = new GoogleGenAI({}); // GOOGLE_GEMINI_BASE_URL: the gateway
  const contents: Content[] = [{ role: "user", parts: [{ text: "Paris" }] }];
  const config = { systemInstruction: "You answer briefly.", tools: [{ functionDeclarations: [WEATHER] }] };
  for (let turn = 0; turn < 4; turn++) {
    const response = await ai.models.generateContent({ model: "gemini-2.5-flash", contents, config });
    const calls = response.functionCalls ?? [];
    if (!calls.length) return response.text ?? "";
    contents.push(response.candidates![0]!.content!);
    contents.push({
      role: "user",
      parts: calls.map((call) => ({
        functionResponse: { name: call.name, response: { result: `sunny in ${String(call.args?.city)}` } },
      })),
    });
  }
  throw new Error("no answer after 4 turns");
}

recordThenReplay("google-genai generateContent", 2, agent);

recordThenReplay("google-genai streamed", 1, async () => {
  const ai = new GoogleGenAI({});
  let text = "";
  const stream = await ai.models.generateContentStream({ model: "gemini-2.5-flash", contents: "Hello there" });
  for await (const chunk of stream) text += chunk.text ?? "";
  return text;
});
