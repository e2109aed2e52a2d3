/** The engines of this process (a Vitest worker): one `otel-replay serve` serves test
 * after test, switched to each test's cassette by the protocol's `use` line, instead of a
 * new engine for each. The first test takes the engine the run's setup started for this
 * worker's slot (`pool.ts`), else starts one (with its cassette: no switch); each
 * test's end switches it to no cassette, which answers that test's own summary. An engine
 * whose settings differ (another engine command, other upstreams or options), or a test
 * that overlaps one in progress (`test.concurrent`), gets an engine of its own. Engines
 * do not keep the process alive: they end with it (their standard input then ends). */
import { callerEnv, findEngine, Serve, serveArgs, } from "./engine.js";
import { claim, settingsKey } from "./pool.js";
/** Idle engines, kept on the global object: a module evaluated again in the same worker
 * (Vitest without isolation re-imports test files' modules) finds the same ones. */
const IDLE = Symbol.for("otel-replay.engines");
const globals = globalThis;
const idle = (globals[IDLE] ??= []);
/** An engine serving `cassette` in `mode`: an idle one of the same settings switched to
 * it, else a new one started for it. */
export async function lease(cassette, mode, options) {
    const engine = findEngine(options.enginePath);
    const args = serveArgs(options);
    const key = settingsKey(engine, args, callerEnv());
    for (;;) {
        const at = idle.findIndex((entry) => entry.key === key);
        // an idle engine of this worker, else the one the run's setup started for its slot
        const serve = at >= 0 ? idle.splice(at, 1)[0].serve : claim(key);
        if (serve === null)
            break;
        if (serve.ended)
            continue;
        try {
            await serve.use(cassette, mode);
        }
        catch (error) {
            if (serve.ended)
                continue; // it died meanwhile: another, or a new one
            idle.push({ key, serve }); // the cassette could not be used: the engine still can
            throw error;
        }
        return leased(key, serve);
    }
    const serve = await Serve.start({ engine, cassette, mode, args });
    serve.unref();
    return leased(key, serve);
}
function leased(key, serve) {
    return {
        env: serve.env,
        async release() {
            const { summary } = await serve.use();
            idle.push({ key, serve });
            return summary;
        },
    };
}
//# sourceMappingURL=engines.js.map