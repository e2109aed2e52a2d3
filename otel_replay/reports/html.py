"""Self-contained HTML: the span data a report page carries and the page shell.

A page is one file with its CSS, its script and its data inline; a Content-Security-Policy
forbids every fetch, so it opens from a CI artifact with no network. The data is one JSON
document in a ``<script type="application/json">``: per span its parent (an index), name,
role, state, times relative to the run's start, error, the miss's ``why``, the model
call's request and answer (already redacted when recorded) and its other attributes. The
script (``assets/report.js``) renders only the rows in view, so 10,000 spans stay usable.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

from otel_replay.core.exchange import Exchange
from otel_replay.reports.prices import cost_of
from otel_replay.reports.spantree import SpanNode, roots, walk
from otel_replay.spans import attributes as own

__all__ = ["asset", "fork_of", "page", "span_data"]

MAX_ATTRIBUTE_CHARS = 20_000
"""Longer attribute values are cut in the page (the trace file keeps them whole)."""

_IN_CALL = frozenset(
    {
        own.REQUEST_BODY,
        own.REQUEST_CANONICAL,
        own.REQUEST_TEMPLATE,  # the body is shown whole, put back together from its pieces
        own.REQUEST_REFS,
        own.PIECES,
        own.PIECES_INLINE,
        own.RESPONSE_BODY,
        own.RESPONSE_EVENTS,
        own.RESPONSE_HEADERS,
        own.MISS_WHY,
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.definitions",
    }
)
_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"


@cache
def asset(name: str) -> str:
    """A file of ``reports/assets`` (the page's CSS and script)."""
    files = resources.files("otel_replay.reports").joinpath("assets")
    return files.joinpath(name).read_text("utf-8")


def _clip(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_ATTRIBUTE_CHARS:
        return value[:MAX_ATTRIBUTE_CHARS] + f"… ({len(value)} characters)"
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return value


def _json_attr(attrs: dict[str, Any], key: str) -> Any:
    value = attrs.get(key)
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _answer(exchange: Exchange) -> Any:
    response = exchange.response
    out: dict[str, Any] = {"status": response.status}
    if response.fault is not None:
        out["fault"] = response.fault
    if response.body is not None:
        out["body"] = response.body
    if response.events is not None:
        out["events"] = [{"event": e.event, "data": e.data} for e in response.events]
    return out


def fork_of(nodes: Sequence[SpanNode]) -> tuple[SpanNode, str] | None:
    """A forked run's first live call (``replay --live-from``) and a line saying where
    the fork is: ``forked at call 3 · live with gpt-4o-mini``; None for another run."""
    for node in sorted(nodes, key=lambda n: n.start_ns):
        provenance = node.exchange.provenance if node.exchange is not None else None
        if provenance and provenance.get("origin") == "live":
            model = provenance.get("model")
            live = f" · live with {model}" if model else ""
            return node, f"forked at call {provenance.get('call')}{live}"
    return None


def _span(node: SpanNode, parent: int, t0: int) -> dict[str, Any]:
    item: dict[str, Any] = {
        "p": parent,
        "n": node.name,
        "r": node.role,
        "s": (node.start_ns - t0) / 1e6,
        "d": (node.end_ns - node.start_ns) / 1e6,
        "id": node.span_id,
        "svc": node.service,
        "a": {k: _clip(v) for k, v in node.attrs.items() if k not in _IN_CALL},
    }
    if node.state:
        item["st"] = node.state
    if node.error:
        item["e"] = node.error
    exchange = node.exchange
    if exchange is not None:
        item["q"] = exchange.raw_request if exchange.raw_request is not None else None
        if item["q"] is None:
            item["q"] = _json_attr(node.attrs, own.REQUEST_CANONICAL)
        item["o"] = _answer(exchange)
        cost = cost_of(exchange) if node.state == "live" else None
        if cost is not None:
            item["c"] = cost
    elif node.role == "miss":
        item["q"] = _json_attr(node.attrs, own.REQUEST_BODY)
        item["w"] = str(node.attrs.get(own.MISS_WHY) or node.attrs.get(own.MISS, ""))
    return item


def span_data(nodes: Sequence[SpanNode]) -> list[dict[str, Any]]:
    """The page's spans, depth first in start order; a child names its parent's index."""
    ordered = walk(roots(nodes))
    listed = {id(node) for node, _ in ordered}
    ordered += walk(n for n in nodes if id(n) not in listed)  # a cycle of parent ids
    t0 = min((node.start_ns for node in nodes if node.start_ns), default=0)
    index: dict[int, int] = {}
    out: list[dict[str, Any]] = []
    parent_of = {id(child): id(node) for node in nodes for child in node.children}
    fork = fork_of(nodes)
    for node, _depth in ordered:
        parent = index.get(parent_of.get(id(node), -1), -1)
        index[id(node)] = len(out)
        out.append(_span(node, parent, t0))
        if fork is not None and fork[0] is node:
            out[-1]["fk"] = fork[1]  # the page marks the fork point on the timeline
    return out


def _script_json(value: Any) -> str:
    """JSON safe inside a ``<script>`` element (no ``<`` to end it early)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def page(title: str, body: str, data: Any = None, script: bool = False) -> str:
    """A whole HTML document: ``body`` (HTML), the page's CSS, and with ``script`` the
    report script reading ``data``."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{asset('report.css')}</style>",
        "</head><body>",
        body,
    ]
    if data is not None:
        parts.append(f'<script type="application/json" id="data">{_script_json(data)}</script>')
    if script:
        parts.append(f"<script>{asset('report.js')}</script>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
