/** What a run of the engine did: the `summary` JSON `otel-replay serve` prints when it
 * stops, and the summary line the pytest plugin prints, in the same words. */
export interface Summary {
    mode: string;
    replayed: number;
    /** Of `replayed`, the turns matched by what they add to their conversation's last one. */
    replayed_by_turn?: number;
    live: number;
    misses: string[];
    /** Of `misses`, those in auto mode that could not go live: no key of the provider set. */
    keyless_misses?: number;
    spans_received: number;
    hits?: number[];
    unused?: number[];
    cassette?: string | null;
    traces?: string | null;
    not_saved: number;
    write_errors: string[];
    live_cost?: number | null;
    live_unpriced?: number;
    bypassed: string[];
    tools?: {
        replayed: number;
        live: number;
        misses: number;
    };
}
/** The key of a test's blocks in its task's `meta` (read back at the end of the run). */
export declare const META_KEY = "otelReplay";
/** What a block made of its test: replayed cleanly, failed, or *not evaluated* (in auto
 * mode, its misses could not go live: no key of the provider was set). */
export type Outcome = "passed" | "failed" | "not evaluated";
/** One block of a run: the test (or the run itself), its cassette and its summary. */
export interface Block {
    test: string;
    cassette: string;
    mode: string;
    summary: Summary;
    outcome?: Outcome;
}
/** Whether `OTEL_REPLAY_STRICT` asks a test left not evaluated to fail instead. */
export declare function strictOutcomes(env?: NodeJS.ProcessEnv): boolean;
/** Whether each of an auto-mode block's misses could not go live for want of the
 * provider's key (and nothing else failed): its test is not evaluated, unless strict. */
export declare function notEvaluated(s: Summary, env?: NodeJS.ProcessEnv): boolean;
export declare function emptySummary(mode: string): Summary;
/** The totals of several blocks: replayed, live, misses and spans added up. */
export declare function combined(summaries: Iterable<Summary>, mode: string): Summary;
/** `otel-replay: 4 replayed · 0 live · 0 misses · 12 spans received`, and what the engine
 * adds after it (calls not saved, the live calls' cost, calls that bypassed the gateway). */
export declare function summaryLine(s: Summary): string;
/** Whether a block fails its test: a miss, a write that failed, or (strict) a model call
 * that bypassed the gateway. */
export declare function failure(s: Summary): string | null;
/** The run's section, as the pytest plugin writes it: the totals with the number of
 * blocks, then each miss with the test it failed. */
export declare function runSection(blocks: readonly Block[], mode: string): string[];
/** A failure's message with the cassette it happened in and the command that explains it. */
export declare function explained(problem: string, cassette: string): string;
