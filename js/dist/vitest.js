/** `useReplay` for Vitest: one test's model calls replayed from (or recorded into) a
 * cassette, by the worker's `otel-replay serve` switched to it (`engines.ts`).
 *
 * ```ts
 * import { useReplay } from "otel-replay/vitest";
 *
 * test("answers", async () => {
 *   await useReplay("answers");            // cassettes/answers.json beside this file
 *   const openai = new OpenAI();           // reads OPENAI_BASE_URL: the gateway
 *   ...
 * });
 * ```
 */
import { readFileSync } from "node:fs";
import { expect, onTestFinished } from "vitest";
import { cassettePath } from "./cassette.js";
import { applyEnv, resolveMode, ReplayMissError } from "./engine.js";
import { lease } from "./engines.js";
import { explained, failure, META_KEY, notEvaluated, } from "./summary.js";
export { OtelReplayError, ReplayMissError } from "./engine.js";
/** Have the worker's engine serve `<fixturesDir>/<name>.json` (the first call in a worker
 * starts it), set its environment until the test ends, then fail the test on a miss — also
 * when the agent swallowed the error its client got, and also in a test marked `it.fails`
 * (a miss is never an expected failure). In auto mode, a test whose misses could not go
 * live because no key of the provider is set is skipped as *not evaluated* instead
 * (`not evaluated: replay miss: …`), unless `OTEL_REPLAY_STRICT=1`. */
export async function useReplay(name, options = {}) {
    const testFile = expect.getState().testPath;
    if (!testFile) {
        throw new Error("otel-replay: useReplay must be called inside a test");
    }
    const cassette = cassettePath(name, testFile, options.fixturesDir);
    const mode = resolveMode(options.mode);
    if (mode === "off")
        return { cassette, mode, env: {} };
    const engine = await lease(cassette, mode, options);
    const restore = applyEnv(engine.env);
    const authority = engine.env.NODE_EXTRA_CA_CERTS;
    const replay = {
        cassette,
        mode,
        env: engine.env,
        ...(authority ? { ca: readFileSync(authority, "utf8") } : {}),
    };
    onTestFinished(async (context) => {
        restore();
        const summary = await engine.release();
        replay.summary = summary;
        const finished = context;
        const task = finished.task;
        const unevaluated = notEvaluated(summary);
        const problem = failure(summary);
        const outcome = unevaluated ? "not evaluated" : problem !== null ? "failed" : "passed";
        const block = { test: testName(task), cassette, mode, summary, outcome };
        const blocks = task.meta[META_KEY] ?? [];
        task.meta[META_KEY] = [...blocks, block];
        if (unevaluated) {
            // no key to go live with: neither passed nor failed (whatever the agent made of it)
            finished.skip(`not evaluated: ${summary.misses[0]}`);
        }
        if (problem !== null) {
            task.fails = false; // a miss is never an expected failure: it fails under it.fails too
            throw new ReplayMissError(explained(problem, cassette));
        }
    });
    return replay;
}
function testName(task) {
    return task.file ? `${task.file.name} > ${task.name}` : task.name;
}
//# sourceMappingURL=vitest.js.map