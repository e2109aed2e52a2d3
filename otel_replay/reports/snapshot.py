"""Trace snapshots: the agent's span tree stored beside the cassette, compared on replay.

A snapshot keeps what a replayed run makes deterministic — span names, kinds, the
parent/child shape, status, attributes and events — and leaves out what is not: ids,
timestamps and durations are not stored; attribute values go through the matching rules
(provider ids, UUIDs, times, … become their numbered placeholders, one numbering for the
whole tree) and through the rows of :data:`VOLATILE` below (ports, trace and span ids
inside values, durations). The user names attributes that do not count (``ignore``, shell
patterns such as ``http.*``). Two snapshots are compared as indented text, so a mismatch
reads as a tree diff.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from otel_replay.core.errors import ConfigError
from otel_replay.core.limits import MAX_BODY_DEPTH
from otel_replay.otlp.received import Span, SpanList

__all__ = [
    "VOLATILE",
    "compare",
    "load_snapshot",
    "render",
    "snapshot",
    "snapshot_path",
    "without",
]

FORMAT = 1
MAX_DEPTH = MAX_BODY_DEPTH
Normalize = Callable[[Any], Any]

# Rows: (attribute key pattern, placeholder) — the value of a matching key is volatile.
VOLATILE_KEYS: tuple[tuple[str, str], ...] = (
    ("*.port", "<port>"),
    ("*duration*", "<duration>"),
    ("*latency*", "<duration>"),
    ("*time_to_first*", "<duration>"),
    ("*timestamp*", "<time>"),
)
# Rows: (pattern in a string value, replacement).
VOLATILE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(127\.0\.0\.1|localhost|\[::1\]):\d{1,5}\b"), r"\1:<port>"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<trace-id>"),
    (re.compile(r"\b[0-9a-f]{16}\b"), "<span-id>"),
)


def snapshot_path(cassette: Path) -> Path:
    """``cassettes/NAME.json`` -> ``cassettes/NAME.spans.json``."""
    return cassette.with_name(f"{cassette.stem}.spans.json")


def _ignored(key: str, ignore: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(key, pattern) for pattern in ignore)


def _volatile(value: Any) -> Any:
    if isinstance(value, str):
        for pattern, replacement in VOLATILE:
            value = pattern.sub(replacement, value)
        return value
    if isinstance(value, list):
        return [_volatile(v) for v in value]
    if isinstance(value, dict):
        return {k: _volatile(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return value


def _attributes(attrs: dict[str, Any], ignore: Sequence[str], normalize: Normalize) -> Any:
    kept: dict[str, Any] = {}
    for key in sorted(attrs):
        if _ignored(key, ignore):
            continue
        placeholder = next((p for pat, p in VOLATILE_KEYS if fnmatch.fnmatchcase(key, pat)), None)
        kept[key] = placeholder if placeholder is not None else _volatile(attrs[key])
    return normalize(kept)


def _node(span: Span, ignore: Sequence[str], normalize: Normalize) -> dict[str, Any]:
    node: dict[str, Any] = {"name": span.name, "kind": span.kind}
    if span.status.code != "UNSET":
        node["status"] = span.status.code
    node["attributes"] = _attributes(span.attributes, ignore, normalize)
    if span.events:
        node["events"] = [
            {"name": e.name, "attributes": _attributes(e.attributes, ignore, normalize)}
            for e in span.events
        ]
    if span.children:
        node["children"] = [_node(child, ignore, normalize) for child in span.children]
    return node


def snapshot(spans: SpanList, normalize: Normalize, ignore: Sequence[str] = ()) -> dict[str, Any]:
    """The snapshot document of ``spans`` (one tree per root, roots in start order).
    ``normalize`` is called once per attribute set, in tree order, so placeholders are
    numbered by first occurrence across the whole tree. A tree deeper than
    :data:`MAX_DEPTH` is a ConfigError (a snapshot is JSON read back by people)."""
    deepest = max((depth for _, depth in spans.walk()), default=0)
    if deepest >= MAX_DEPTH:
        raise ConfigError(
            f"the span tree nests {deepest + 1} levels deep; a trace snapshot keeps at most "
            f"{MAX_DEPTH} (assert on run.spans instead)"
        )
    roots = [_node(root, tuple(ignore), normalize) for root in spans.roots]
    return {"format": FORMAT, "ignore": sorted(ignore), "spans": roots}


def render(doc: dict[str, Any]) -> list[str]:
    """A snapshot as indented lines: a span, then its attributes and events, then its
    children one level deeper."""
    lines: list[str] = []

    def attrs(values: dict[str, Any], indent: str) -> None:
        for key, value in values.items():
            lines.append(f"{indent}{key} = {json.dumps(value, sort_keys=True)}")

    def walk(node: dict[str, Any], depth: int) -> None:
        pad = "    " * depth
        status = f" {node['status']}" if "status" in node else ""
        lines.append(f"{pad}{node['name']} [{node['kind']}{status}]")
        attrs(node.get("attributes", {}), pad + "  | ")
        for event in node.get("events", []):
            lines.append(f"{pad}  @ {event['name']}")
            attrs(event.get("attributes", {}), pad + "  |   ")
        for child in node.get("children", []):
            walk(child, depth + 1)

    for root in doc.get("spans", []):
        walk(root, 0)
    return lines


def without(doc: dict[str, Any], ignore: Sequence[str]) -> dict[str, Any]:
    """``doc`` without the attributes ``ignore`` names (a snapshot written before an
    attribute was ignored compares without it)."""

    def strip(node: dict[str, Any]) -> dict[str, Any]:
        out = dict(node)
        if isinstance(node.get("attributes"), dict):
            out["attributes"] = {
                k: v for k, v in node["attributes"].items() if not _ignored(k, ignore)
            }
        if "events" in node:
            out["events"] = [strip(e) for e in node["events"]]
        if "children" in node:
            out["children"] = [strip(c) for c in node["children"]]
        return out

    return {**doc, "spans": [strip(root) for root in doc.get("spans", [])]}


def compare(recorded: dict[str, Any], current: dict[str, Any], where: str) -> str | None:
    """None when the two span trees are the same; else the tree diff, saying which side
    is which. Attributes ``current`` ignores are ignored in ``recorded`` too."""
    old = render(without(recorded, current.get("ignore", ())))
    new = render(current)
    if old == new:
        return None
    diff = difflib.unified_diff(old, new, f"{where} (recorded)", "this run", n=3, lineterm="")
    return "\n".join(diff)


def load_snapshot(path: Path) -> dict[str, Any]:
    """A snapshot file; a clear error naming it when it is not one."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ConfigError(f"{path}: not a trace snapshot: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("spans"), list):
        raise ConfigError(f'{path}: not a trace snapshot (no "spans" list)')
    if doc.get("format") != FORMAT:
        raise ConfigError(
            f"{path}: trace snapshot format {doc.get('format')!r}; this otel-replay reads "
            f"format {FORMAT} (upgrade otel-replay, or rewrite it with "
            "--otel-replay-update-snapshots)"
        )
    return doc
