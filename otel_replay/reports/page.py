"""The report pages: one run (HTML: span tree and timeline; Markdown: summary, misses and
trajectory), a test session, and a trajectory diff."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from otel_replay.reports.diff import TrajectoryDiff
from otel_replay.reports.difftext import render_md, render_text, shown_rows, step_label
from otel_replay.reports.html import fork_of, page, span_data
from otel_replay.reports.prices import cost_of, money, price_date
from otel_replay.reports.spantree import SpanNode
from otel_replay.reports.trajectory import trajectory_from_spans

__all__ = ["diff_page", "run_markdown", "run_page", "suite_markdown", "suite_page"]

_e = html.escape
_MARK = {"equal": "", "changed": "~", "added": "+", "removed": "−"}


def counts(nodes: Sequence[SpanNode]) -> dict[str, Any]:
    """What a run's spans add up to: spans, model calls by state, live cost, duration."""
    states = [n.state for n in nodes if n.state and n.role != "tool"]  # model calls
    starts = [n.start_ns for n in nodes if n.start_ns]
    ends = [n.end_ns for n in nodes if n.end_ns]
    costs = [cost_of(n.exchange) for n in nodes if n.state == "live" and n.exchange]
    priced = [c for c in costs if c is not None]
    return {
        "spans": len(nodes),
        "replayed": states.count("replayed"),
        "live": states.count("live"),
        "misses": states.count("miss"),
        "cost": sum(priced) if priced else None,
        "ms": (max(ends) - min(starts)) / 1e6 if starts and ends else 0.0,
    }


def _cost(value: float | None) -> str:
    return "" if value is None else f" · live calls cost {money(value)} (prices of {price_date()})"


def _fork(nodes: Sequence[SpanNode]) -> str:
    fork = fork_of(nodes)
    return "" if fork is None else f" · {fork[1]}"


def _summary_html(nodes: Sequence[SpanNode], doc: dict[str, Any] | None) -> str:
    c = counts(nodes)
    line = (
        f"{c['spans']} spans · {c['replayed']} replayed · {c['live']} live · "
        f"{c['misses']} {'miss' if c['misses'] == 1 else 'misses'} · {c['ms']:.0f} ms"
        + _cost(c["cost"])
        + _fork(nodes)
    )
    out = [f'<p id="summary">{_e(line)}</p>']
    if doc:
        for miss in doc.get("miss_details", []):
            out.append(f'<p class="miss-line">{_e(str(miss.get("message", "")))}</p>')
        for error in doc.get("write_errors", []):
            out.append(f'<p class="miss-line">{_e(str(error))}</p>')
    return "\n".join(out)


_HELP = "↑/↓ or j/k move · ←/→ collapse/expand · Enter toggle · / search · Esc clear"


def run_page(
    nodes: Sequence[SpanNode], doc: dict[str, Any] | None = None, title: str = "run"
) -> str:
    """The HTML report of one run: summary, then the span tree with its timeline beside
    and the selected span's details (request, answer, why, attributes)."""
    body = f"""<header><h1>otel-replay · {_e(title)}</h1>
{_summary_html(nodes, doc)}
<div class="bar"><input id="search" type="search" placeholder="search spans ( / )"
 aria-label="search spans"><span id="count"></span>
<button id="expand-all" type="button">expand all</button>
<button id="collapse-all" type="button">collapse all</button>
<span class="help">{_e(_HELP)}</span></div></header>
<main><div id="tree" tabindex="0" role="tree" aria-label="spans"><div id="rows"></div></div>
<aside id="detail"><p class="hint">Select a span to see its details.</p></aside></main>"""
    return page(f"otel-replay · {title}", body, data={"spans": span_data(nodes)}, script=True)


def run_markdown(nodes: Sequence[SpanNode], doc: dict[str, Any] | None, traces: Path | None) -> str:
    """The Markdown report of one run: its summary, misses and trajectory."""
    c = counts(nodes)
    lines = ["### otel-replay run", ""]
    if doc:
        lines.append(
            f"{doc['replayed']} replayed · {doc['live']} live · {len(doc['misses'])} misses · "
            f"{doc['spans_received']} spans received" + _cost(doc.get("live_cost")) + _fork(nodes)
        )
        for miss in doc.get("miss_details", []):
            lines.append(f"- **{miss.get('message', '')}**")
        lines += [f"- {error}" for error in doc.get("write_errors", [])]
    else:
        lines.append(
            f"{c['spans']} spans · {c['replayed']} replayed · {c['live']} live · "
            f"{c['misses']} misses" + _cost(c["cost"]) + _fork(nodes)
        )
    if nodes:
        steps = trajectory_from_spans(nodes, str(traces or ""), []).steps
        lines += ["", "| # | step |", "|---|---|"]
        for i, step in enumerate(steps, 1):
            label = step_label(step).replace("|", "\\|").replace("`", "'")
            lines.append(f"| {i} | {label[:200]} |")
    return "\n".join(lines) + "\n"


def _block_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(doc.get("blocks", []))


def suite_page(doc: dict[str, Any], diffs: Mapping[int, TrajectoryDiff] | None = None) -> str:
    """A test session's report: totals, then one row per block; a block that missed
    shows its diff against its recording."""
    totals = doc["totals"]
    rows = []
    for i, block in enumerate(_block_rows(doc)):
        misses = "<br>".join(_e(m) for m in block.get("misses", []))
        cls = ' class="failed"' if block.get("misses") else ""
        rows.append(
            f"<tr{cls}><td>{_e(block['test'])}</td><td>{_e(block['cassette'])}</td>"
            f"<td>{_e(block['mode'])}</td><td>{block['replayed']}</td><td>{block['live']}</td>"
            f"<td>{misses}</td></tr>"
        )
        if diffs and i in diffs:
            rows.append(
                '<tr class="diff"><td colspan="6"><details><summary>diff against the '
                f"recording</summary><pre>{_e(render_text(diffs[i]))}</pre></details></td></tr>"
            )
    body = f"""<header><h1>otel-replay · test session</h1>
<p id="summary">{totals["replayed"]} replayed · {totals["live"]} live ·
{len(totals["misses"])} misses · {totals["spans_received"]} spans received
{_e(_cost(totals.get("live_cost")))}{_e(_not_evaluated(doc))}</p></header>
<table class="blocks"><thead><tr><th>test</th><th>cassette</th><th>mode</th><th>replayed</th>
<th>live</th><th>misses</th></tr></thead><tbody>{"".join(rows)}</tbody></table>"""
    return page("otel-replay · test session", body)


def _not_evaluated(doc: dict[str, Any]) -> str:
    """`` · 2 not evaluated`` after a session's totals (blocks whose auto-mode misses could
    not go live for want of a key); nothing when there are none."""
    count = int((doc.get("outcomes") or {}).get("not evaluated", 0))
    return f" · {count} not evaluated" if count else ""


def suite_markdown(doc: dict[str, Any], diffs: Mapping[int, TrajectoryDiff] | None = None) -> str:
    totals = doc["totals"]
    lines = [
        "### otel-replay test session",
        "",
        f"{totals['replayed']} replayed · {totals['live']} live · {len(totals['misses'])} "
        f"misses · {totals['spans_received']} spans received"
        + _cost(totals.get("live_cost"))
        + _not_evaluated(doc),
        "",
        "| test | cassette | mode | replayed | live | misses |",
        "|---|---|---|---|---|---|",
    ]
    for b in _block_rows(doc):
        misses = "<br>".join(str(m).replace("|", "\\|") for m in b.get("misses", []))
        lines.append(
            f"| {b['test']} | {b['cassette']} | {b['mode']} | {b['replayed']} | {b['live']} "
            f"| {misses} |"
        )
    for i, diff in sorted((diffs or {}).items()):
        test = _block_rows(doc)[i]["test"]
        lines += ["", f"<details><summary>{test}: diff against the recording</summary>", ""]
        lines += [render_md(diff).replace("### ", "#### ", 1), "</details>"]
    return "\n".join(lines) + "\n"


def diff_page(diff: TrajectoryDiff) -> str:
    """A trajectory diff as a page: the headline, the first divergence, every step."""
    first = diff.first
    _, shown, _ = shown_rows(diff, window=False)
    rows = []
    for r in shown:
        cls = f' class="{r.op}{" first" if first is not None and r.number == first + 1 else ""}"'
        rows.append(
            f"<tr{cls}><td>{_MARK[r.op]}</td><td>{r.number}</td><td>{_e(r.what)}</td>"
            f"<td>{_e(r.label)}</td><td>{_e(r.was)}</td></tr>"
        )
    changes = ""
    if first is not None:
        items = "".join(
            f"<tr><th>{_e(label)}</th><td><pre>{_e(was)}</pre></td><td><pre>{_e(now)}</pre></td></tr>"
            for label, was, now in diff.rows[first].changes
        )
        head = "<tr><th></th><th>BASE</th><th>NEW</th></tr>"
        changes = f'<table class="changes">{head}{items}</table>'
    body = f"""<header><h1>otel-replay diff</h1>
<p>BASE <code>{_e(diff.base.source)}</code> · NEW <code>{_e(diff.new.source)}</code></p>
<p id="summary">{_e(diff.headline())}</p></header>
{changes}
<table class="steps"><thead><tr><th></th><th>#</th><th>what</th><th>step</th><th>BASE was</th>
</tr></thead><tbody>{"".join(rows)}</tbody></table>
<details><summary>Markdown</summary><pre>{_e(render_md(diff))}</pre></details>"""
    return page("otel-replay diff", body)
