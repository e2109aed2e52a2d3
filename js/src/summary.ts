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
  tools?: { replayed: number; live: number; misses: number };
}

/** The key of a test's blocks in its task's `meta` (read back at the end of the run). */
export const META_KEY = "otelReplay";

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
export function strictOutcomes(env: NodeJS.ProcessEnv = process.env): boolean {
  return ["1", "true", "yes"].includes((env.OTEL_REPLAY_STRICT ?? "").trim().toLowerCase());
}

/** Whether each of an auto-mode block's misses could not go live for want of the
 * provider's key (and nothing else failed): its test is not evaluated, unless strict. */
export function notEvaluated(s: Summary, env: NodeJS.ProcessEnv = process.env): boolean {
  const misses = s.misses.length;
  return (
    s.mode === "auto" &&
    misses > 0 &&
    (s.keyless_misses ?? 0) === misses &&
    !s.write_errors.length &&
    !strictOutcomes(env)
  );
}

export function emptySummary(mode: string): Summary {
  return {
    mode,
    replayed: 0,
    live: 0,
    misses: [],
    spans_received: 0,
    not_saved: 0,
    write_errors: [],
    live_cost: null,
    live_unpriced: 0,
    bypassed: [],
  };
}

/** The totals of several blocks: replayed, live, misses and spans added up. */
export function combined(summaries: Iterable<Summary>, mode: string): Summary {
  const total = emptySummary(mode);
  for (const s of summaries) {
    total.replayed += s.replayed;
    total.live += s.live;
    total.misses.push(...s.misses);
    total.keyless_misses = (total.keyless_misses ?? 0) + (s.keyless_misses ?? 0);
    total.spans_received += s.spans_received;
    total.not_saved += s.not_saved;
    total.write_errors.push(...s.write_errors);
    if (s.live_cost != null) total.live_cost = (total.live_cost ?? 0) + s.live_cost;
    total.live_unpriced = (total.live_unpriced ?? 0) + (s.live_unpriced ?? 0);
    total.bypassed.push(...s.bypassed);
  }
  return total;
}

function money(value: number): string {
  return value >= 0.01 || value === 0 ? `$${value.toFixed(4)}` : `$${value.toFixed(6)}`;
}

const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;

/** `otel-replay: 4 replayed · 0 live · 0 misses · 12 spans received`, and what the engine
 * adds after it (calls not saved, the live calls' cost, calls that bypassed the gateway). */
export function summaryLine(s: Summary): string {
  let line =
    `otel-replay: ${s.replayed} replayed · ${s.live} live · ` +
    `${plural(s.misses.length, "miss", "misses")} · ` +
    `${plural(s.spans_received, "span", "spans")} received`;
  if (s.write_errors.length) line += ` · ${s.not_saved} not saved`;
  const unpriced = s.live_unpriced ?? 0;
  if (s.live && s.live_cost != null && unpriced !== s.live) {
    line += ` · live calls cost ${money(s.live_cost)}`;
    if (unpriced) line += ` (${unpriced} not priced)`;
  }
  if (s.bypassed.length) {
    line += ` · ${plural(s.bypassed.length, "model call", "model calls")} bypassed the gateway`;
  }
  return line;
}

/** Whether a block fails its test: a miss, a write that failed, or (strict) a model call
 * that bypassed the gateway. */
export function failure(s: Summary): string | null {
  if (s.misses.length) return s.misses[0]!;
  if (s.write_errors.length) return `otel-replay: ${s.write_errors.join("; ")}`;
  if (s.bypassed.length && s.mode === "strict") {
    return `otel-replay: model calls bypassed the gateway: ${s.bypassed.join(", ")}`;
  }
  return null;
}

/** The run's section, as the pytest plugin writes it: the totals with the number of
 * blocks, then each miss with the test it failed. */
export function runSection(blocks: readonly Block[], mode: string): string[] {
  const totals = combined(
    blocks.map((b) => b.summary),
    mode,
  );
  const unevaluated = blocks.filter((b) => b.outcome === "not evaluated").length;
  const extra = unevaluated ? ` · ${unevaluated} not evaluated` : "";
  const lines = [`${summaryLine(totals)} · ${blocks.length} blocks${extra}`];
  for (const block of blocks) {
    for (const miss of block.summary.misses) lines.push(`${block.test}: ${miss}`);
  }
  return lines;
}

/** A failure's message with the cassette it happened in and the command that explains it. */
export function explained(problem: string, cassette: string): string {
  return `${problem}\n(cassette ${cassette}; explain: otel-replay why --cassette ${cassette})`;
}
