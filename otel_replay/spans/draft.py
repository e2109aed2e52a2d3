"""The request's half of a recorded span, drafted while the provider works.

A recorded call's span is written before its answer reaches the agent, so what it costs
once the answer is in adds to the call. Most of a span is the request's: its GenAI
contents and its exact body, whose long strings are found by a walk and whose texts are
encoded, for a coding agent's request hundreds of kilobytes. :class:`RequestDraft` does
that while the provider works; ``spans.encode`` then only places each long string
against the trace file (``spans.pieces``) and takes a drafted text wherever the placing
comes out as it did for the draft, so the span is the one it would have made at once.

A conversation resends its earlier messages as the very same objects every turn
(``core.memo``), and once the trace file holds their long strings each reads as markers
only. The text of such an object, and of one with no long string, is written once per
object; a list's text is its items' texts between commas, so a draft writes what is new
in its request and joins the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from otel_replay.core import genai, jsontext
from otel_replay.core.exchange import JSON, CanonicalRequest
from otel_replay.core.jsontext import orjson_text
from otel_replay.core.memo import IdentityMemo
from otel_replay.spans.attributes import PIECE_MARKER
from otel_replay.spans.pieces import (
    Found,
    Ledger,
    item_strings,
    long_strings,
    piece_id,
    substituted,
    templated,
)

__all__ = ["RequestDraft", "marked_text"]


class RequestDraft:
    """The request's half of a recorded span: its long strings found and its texts
    written against what the trace file held then (a fork of its ledger). Once the
    answer is in, the span places each string again (a lookup each) and uses a drafted
    text wherever the placing comes out the same."""

    __slots__ = (
        "body",
        "body_found",
        "body_text",
        "contents",
        "ids",
        "lists",
        "plan_key",
        "refs",
        "request",
        "template",
        "tools_short",
    )

    def __init__(self, request: CanonicalRequest, body: JSON, ledger: Ledger) -> None:
        self.request, self.body = request, body
        fork = ledger.fork()
        self.contents: dict[str, tuple[Found, list[str | None], str]] = {}
        self.ids: dict[str, str] = {}
        self.tools_short = False
        for attribute, value in genai.request_contents(request):
            if attribute == genai.TOOL_DEFINITIONS:
                value, self.tools_short = fork.lists.tool_view(value)
            found = long_strings(value)
            known = fork.place_inline(attribute, found)
            self.contents[attribute] = (found, known, marked_text(value, found, known))
            self.ids.update(fork.named(found))
        plan = fork.lists.plan(body)
        self.plan_key = plan.key()
        template = plan.template(body)
        self.body_found = long_strings(template)
        self.ids.update(fork.named(self.body_found))
        refs = [[list(path), self.ids[text]] for path, text in self.body_found]
        entries = plan.entries()
        whole = not refs and not entries
        self.template = "" if whole else _template_text(template, self.body_found, refs)
        self.refs = "" if whole else jsontext.value_text(refs)
        self.lists = jsontext.value_text(entries) if entries else ""
        self.body_text = jsontext.value_text(body) if whole else None

    def texts(self) -> list[str]:
        """The texts drafted, as the span's attributes will hold them."""
        drafted = [text for _, _, text in self.contents.values()]
        return [*drafted, self.template, self.refs, self.lists, self.body_text or ""]


def marked_text(value: JSON, found: Found, known: list[str | None]) -> str:
    """``jsontext.value_text(Ledger.marked(value, found, known))``: ``value`` with each string
    found whose piece is ``known`` as its marker, an object of a list that reads as markers
    only (or holds no long string) written once per object."""
    text = _composed(value, found, known, 0, len(found), 0)
    return jsontext.value_text(Ledger.marked(value, found, known)) if text is None else text


def _template_text(body: JSON, found: Found, refs: list[list[Any]]) -> str:
    """``jsontext.value_text(templated(body, refs))``, as ``marked_text`` writes it."""
    known = [piece for _, piece in refs]
    text = _composed(body, found, known, 0, len(found), 0)
    return jsontext.value_text(templated(body, refs)) if text is None else text


def _all_marked(item: dict[str, JSON]) -> str | None:
    changes = [(inner, PIECE_MARKER + piece_id(text)) for inner, text in item_strings(item)]
    return jsontext.orjson_value_text(substituted(item, changes))


def _size(text: str | None) -> int:
    return len(text) if text else 0


_TEXTS = 32 * 1024 * 1024  # characters of texts each memo below holds at most
_marked_item = IdentityMemo(_all_marked, 1 << 14, weigh=_size, budget=_TEXTS)
"""The text of an object met in a list, every long string in it as its marker: per object
(a piece is named by its text, so its marker is the same whatever the file holds)."""
_plain_item = IdentityMemo(jsontext.orjson_value_text, 1 << 14, weigh=_size, budget=_TEXTS)
"""The text of an object met in a list that holds no long string: per object."""


def _composed(
    value: JSON, found: Found, known: Sequence[str | None], lo: int, hi: int, depth: int
) -> str | None:
    """The marked text of ``value``, whose strings found are ``found[lo:hi]`` (their paths
    from ``depth`` on lead into it); None where orjson would not write it."""
    if lo == hi:
        return jsontext.orjson_value_text(value)
    kind = type(value)
    if kind is not list and not (kind is dict and depth == 0):
        return _composed_one(value, found, known, lo, hi, depth)
    parts: list[str] = []
    j = lo
    keys: Any = range(len(value)) if kind is list else value
    for key in keys:
        item = value[key]
        k = j
        while k < hi and found[k][0][depth] == key:
            k += 1
        listed = kind is list and type(item) is dict  # an object met again as itself
        if k == j:
            text = _plain_item(item) if listed else jsontext.orjson_value_text(item)
        elif listed and all(known[x] for x in range(j, k)):
            text = _marked_item(item)
        else:
            text = _composed(item, found, known, j, k, depth + 1)
        if text is None:
            return None
        if kind is dict:
            name = orjson_text(key)
            if name is None:
                return None
            text = f"{name.decode()}:{text}"
        parts.append(text)
        j = k
    if j != hi:  # not in the walk's order: the whole value is written as it is
        return None
    return f"[{','.join(parts)}]" if kind is list else f"{{{','.join(parts)}}}"


def _composed_one(
    value: JSON, found: Found, known: Sequence[str | None], lo: int, hi: int, depth: int
) -> str | None:
    """The marked text of ``value`` written as a whole."""
    changes = [
        (found[x][0][depth:], PIECE_MARKER + piece)
        for x in range(lo, hi)
        if (piece := known[x]) is not None
    ]
    return jsontext.orjson_value_text(substituted(value, changes))
