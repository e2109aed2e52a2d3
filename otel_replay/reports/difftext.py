"""A trajectory diff as text (a terminal) or Markdown (a pull-request comment, or
``$GITHUB_STEP_SUMMARY``): the headline, the first divergence with both sides, and the
aligned steps from a little before it to the end."""

from __future__ import annotations

import json
from dataclasses import dataclass

from otel_replay.reports.diff import Row, TrajectoryDiff
from otel_replay.reports.trajectory import Step

__all__ = ["CONTEXT", "MAX_ROWS", "Shown", "render_md", "render_text", "shown_rows", "step_label"]

CONTEXT = 2  # equal steps shown before the first divergence
MAX_ROWS = 60  # rows shown after it
MAX_VALUE = 300  # characters of a value shown

MAX_WHY_LINES = 30  # lines of a miss's why shown

_MARK = {"equal": " ", "changed": "~", "added": "+", "removed": "-"}
_MD_MARK = {"equal": "", "changed": "~", "added": "+", "removed": "−"}


def _clip(text: str, limit: int = MAX_VALUE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _answer_text(answer: str) -> str:
    """An answer's parts as a reader says them: its text, ``calls NAME(ARGS)``."""
    try:
        parts = json.loads(answer)
    except ValueError:
        return answer
    said: list[str] = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            said.append(json.dumps(part.get("content"), ensure_ascii=False))
        elif part.get("type") == "tool_call":
            args = json.dumps(part.get("arguments"), ensure_ascii=False, separators=(",", ":"))
            said.append(f"calls {part.get('name')}({args})")
        elif part.get("type") == "error":
            said.append(f"error {part.get('fault') or part.get('status')}")
    return ", ".join(said) or answer


def step_label(step: Step | None) -> str:
    """A step in one line: ``model gpt-4o-mini → calls get_weather({"city":"Lisbon"})``,
    ``tool get_weather [replayed] {"city":"Lisbon"}``, ``miss: replay miss: …``."""
    if step is None:
        return ""
    if step.kind == "miss":
        return f"miss: {step.name}"
    state = f" [{step.state}]" if step.state else ""
    if step.kind == "tool":
        args = step.fact("arguments")
        return f"tool {step.name}{state}" + (f" {_clip(args, 80)}" if args else "")
    answer = _answer_text(step.fact("answer") or "")
    return f"model {step.name}{state} → {_clip(answer, 100)}"


@dataclass(frozen=True, slots=True)
class Shown:
    """One row as a rendering shows it: its number, mark, step and what BASE had."""

    number: int
    op: str
    what: str
    label: str
    was: str


def shown_rows(diff: TrajectoryDiff, window: bool = True) -> tuple[int, list[Shown], int]:
    """The rows to show: (equal rows left out before, rows, rows left out after); with
    ``window``, from a little before the first divergence, at most MAX_ROWS."""
    first = diff.first or 0
    start, end = (max(0, first - CONTEXT), first + MAX_ROWS) if window else (0, len(diff.rows))
    end = min(end, len(diff.rows))
    out = []
    for i in range(start, end):
        row = diff.rows[i]
        side = row.new if row.op != "removed" else row.base
        was = step_label(row.base) if row.op == "changed" else ""
        out.append(Shown(i + 1, row.op, row.what, step_label(side), was))
    return start, out, len(diff.rows) - end


def _changes(row: Row) -> list[tuple[str, str, str]]:
    if row.changes:
        return row.changes
    if row.op == "added" and row.new is not None:
        return [("step", "", step_label(row.new))]
    if row.op == "removed" and row.base is not None:
        return [("step", step_label(row.base), "")]
    return []


def _why(row: Row) -> list[str]:
    if row.new is not None and row.new.kind == "miss" and row.new.shown:
        return row.new.shown.rstrip().splitlines()[:MAX_WHY_LINES]
    return []


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def render_text(diff: TrajectoryDiff) -> str:
    lines = [f"BASE {diff.base.source} · NEW {diff.new.source}", diff.headline()]
    if diff.first is None:
        return "\n".join(lines) + "\n"
    row = diff.rows[diff.first]
    lines.append("")
    for label, was, now in _changes(row):
        lines += [f"  {label}:", f"    BASE  {_clip(was) or '—'}", f"    NEW   {_clip(now) or '—'}"]
    why = _why(row)
    if why:
        lines += ["", *("  " + line for line in why)]
    lines += ["", "steps (~ changed, + only in NEW, - only in BASE):"]
    before, rows, after = shown_rows(diff)
    if before:
        lines.append(f"        … {_plural(before, 'equal step')}")
    for r in rows:
        lines.append(f"  {_MARK[r.op]} {r.number:>3}  {r.label}")
        if r.was:
            lines.append(f"         was  {r.was}")
    if after:
        lines.append(f"        … {after} more")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return _clip(text).replace("|", "\\|").replace("`", "'") or "—"


def render_md(diff: TrajectoryDiff) -> str:
    verdict = "same trajectory" if diff.equal else "trajectories differ"
    lines = [
        f"### otel-replay diff: {verdict}",
        "",
        f"BASE `{diff.base.source}` · NEW `{diff.new.source}`  ",
        f"**{diff.headline()}**",
    ]
    if diff.first is None:
        return "\n".join(lines) + "\n"
    row = diff.rows[diff.first]
    lines += ["", "| at the first divergence | BASE | NEW |", "|---|---|---|"]
    lines += [f"| {label} | `{_md(was)}` | `{_md(now)}` |" for label, was, now in _changes(row)]
    why = _why(row)
    if why:
        lines += ["", "<details><summary>why</summary>", "", "```", *why, "```", "</details>"]
    lines += ["", "| | # | what | step | BASE had |", "|---|---|---|---|---|"]
    before, rows, after = shown_rows(diff)
    if before:
        span = f"1–{before}" if before > 1 else "1"
        lines.append(f"| | {span} | same | {_plural(before, 'equal step')} | |")
    for r in rows:
        was = _md(r.was) if r.was else ""
        lines.append(f"| {_MD_MARK[r.op]} | {r.number} | {r.what} | {_md(r.label)} | {was} |")
    if after:
        lines.append(f"| | | | … {after} more | |")
    return "\n".join(lines) + "\n"
