/** One text turn of a Realtime session over openai-node's `OpenAIRealtimeWS`, which dials
 * wss:// only: its text, or the error the client got. `ca`: the authority its TLS client
 * trusts, for a worker that started before the gateway (else Node's own, which
 * `NODE_EXTRA_CA_CERTS` extends as a process starts). */

import OpenAI from "openai";
import { OpenAIRealtimeWS } from "openai/realtime/ws";

export async function talk(prompt: string, ca?: string): Promise<string> {
  const options = ca === undefined ? {} : { options: { ca } };
  const rt = new OpenAIRealtimeWS({ model: "gpt-realtime", ...options }, new OpenAI());
  try {
    return await new Promise<string>((done, fail) => {
      let text = "";
      rt.socket.once("error", fail);
      rt.on("error", (error) => done(`error: ${error.message}`));
      rt.on("response.output_text.delta", (event) => {
        text += event.delta;
      });
      rt.on("response.done", () => done(text));
      rt.socket.once("open", () => {
        rt.send({
          type: "session.update",
          session: { type: "realtime", instructions: "Be brief.", output_modalities: ["text"] },
        });
        rt.send({
          type: "conversation.item.create",
          item: { type: "message", role: "user", content: [{ type: "input_text", text: prompt }] },
        });
        rt.send({ type: "response.create" });
      });
    });
  } finally {
    rt.close();
  }
}
