/** Record an agent against the stub upstream, then replay it strictly with the upstream
 * stopped: the same answers, every call replayed. */

import { describe, expect, onTestFinished, test } from "vitest";

import { useReplay, type Replay } from "otel-replay/vitest";

import { stubForFile, upstreams } from "./peers.js";

export type Agent = () => Promise<string>;

export function recordThenReplay(title: string, calls: number, agent: Agent): void {
  describe(title, () => {
    let recorded = "";
    const folder = stubForFile();
    const name = title.replace(/[^A-Za-z0-9]+/g, "-");

    test("records against the provider", async () => {
      const upstream = upstreams(folder.stub());
      await useReplay(name, { mode: "record", fixturesDir: folder.dir, upstreams: upstream });
      recorded = await agent();
      expect(recorded).toContain("stub reply to:");
    });

    test("replays strictly with the provider stopped", async () => {
      await folder.stub().stop();
      let replay: Replay | undefined;
      onTestFinished(() => {
        // runs after useReplay's own end (hooks run last registered first)
        expect(replay?.summary?.replayed).toBe(calls);
        expect(replay?.summary?.misses).toEqual([]);
      });
      replay = await useReplay(name, { mode: "strict", fixturesDir: folder.dir });
      expect(replay.env.OPENAI_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      expect(await agent()).toBe(recorded);
    });
  });
}
