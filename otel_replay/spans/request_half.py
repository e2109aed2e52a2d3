"""The request's half of a recorded span: its model and parameters, its GenAI contents
and its exact body, written against what the trace file holds (``spans.pieces``: long
strings once per file; ``spans.lists``: list fields by reference to earlier spans' lists,
tool definitions by name once written whole). Each function gives its attributes as
``(key, text)`` pairs, in the span's order (``request_attributes`` with the kind of each
value); ``spans.encode`` writes them and puts the rest of the span around them."""

from __future__ import annotations

from typing import Any

from otel_replay.core import genai, jsontext
from otel_replay.core.exchange import JSON, CanonicalRequest
from otel_replay.spans import attributes as own
from otel_replay.spans.draft import RequestDraft
from otel_replay.spans.lists import ListPlan
from otel_replay.spans.pieces import Ledger, long_strings, templated

__all__ = [
    "begin_span",
    "body_attributes",
    "canonical_attributes",
    "content",
    "contents_attributes",
    "format_version",
    "request_attributes",
]

Attributes = list[tuple[str, str]]
Typed = list[tuple[str, str, Any]]
"""``(kind, key, value)``: the attribute ``key`` as the span's sink writes a value of its
``kind`` (``text``, ``integer``, ``double``, ``texts``: ``spans.span_pb.Sink``)."""


def _dumps(value: JSON) -> str:
    return jsontext.value_text(value)


def content(
    ledger: Ledger | None, attribute: str, value: JSON, draft: RequestDraft | None = None
) -> str:
    """A GenAI content attribute's text; with a ledger, pieces stored before as markers.
    A drafted text is used when the placing comes out as it did for the draft."""
    drafted = None if draft is None else draft.contents.get(attribute)
    if draft is None or drafted is None:
        return _dumps(value if ledger is None else ledger.view(attribute, value))
    found, known, text = drafted
    if ledger is None:
        return _dumps(value) if found else text
    now = ledger.place_inline(attribute, found, draft.ids)
    return text if now == known else _dumps(Ledger.marked(value, found, now))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def request_attributes(
    request: CanonicalRequest, ledger: Ledger | None, draft: RequestDraft | None
) -> Typed:
    """The request's GenAI attributes: its model, each parameter the conventions name (the
    first of those naming one attribute) in its kind, its contents (``contents_attributes``)."""
    typed: Typed = []
    if request.model is not None:
        typed.append(("text", genai.REQUEST_MODEL, request.model))
    seen: set[str] = set()
    for name, value in request.params.items():
        param = genai.PARAM_OF_NAME.get(name)
        if param is None or param.attribute in seen or value is None:
            continue
        seen.add(param.attribute)
        key, kind = param.attribute, param.kind
        if kind == "int" and _is_int(value):
            typed.append(("integer", key, value))
        elif kind == "double" and (_is_int(value) or isinstance(value, float)):
            typed.append(("double", key, float(value)))
        elif kind == "strings":
            items = [value] if isinstance(value, str) else value
            if isinstance(items, list) and all(isinstance(i, str) for i in items):
                typed.append(("texts", key, items))
    typed.extend(("text", key, text) for key, text in contents_attributes(request, ledger, draft))
    return typed


def contents_attributes(
    request: CanonicalRequest, ledger: Ledger | None, draft: RequestDraft | None
) -> Attributes:
    """The request's GenAI content attributes (input messages, system instructions, tool
    definitions: by name only where the file holds them whole)."""
    attrs: Attributes = []
    for attribute, value in genai.request_contents(request):
        drafted = draft
        if attribute == genai.TOOL_DEFINITIONS:
            value, short = (value, False) if ledger is None else ledger.lists.tool_view(value)
            if draft is not None and draft.tools_short != short:
                drafted = None  # the file holds other tools than when drafted
            if short:
                text = None if drafted is None else drafted.contents[attribute][2]
                attrs.append((attribute, _dumps(value) if text is None else text))
                continue
        attrs.append((attribute, content(ledger, attribute, value, drafted)))
    return attrs


def begin_span(body: JSON, ledger: Ledger | None) -> ListPlan | None:
    """A span's request half begun: the ledger's span begun (its pieces and lists are this
    step's), and how the body's list fields are written against the file (None without a
    ledger), taken as the span's lists."""
    if ledger is None:
        return None
    ledger.begin()
    if body is None:
        return None
    plan = ledger.lists.plan(body)
    ledger.lists.take(plan)
    return plan


def body_attributes(
    body: JSON, ledger: Ledger | None, plan: ListPlan | None, draft: RequestDraft | None = None
) -> Attributes:
    """The exact request body: whole, or as a template whose long strings are pieces and
    whose list fields begin with earlier spans' lists (the texts are the draft's when its
    lists came out the same: a piece is named by its text)."""
    if ledger is None or plan is None:
        text = None if draft is None else draft.body_text
        return [(own.REQUEST_BODY, _dumps(body) if text is None else text)]
    if draft is not None and draft.plan_key != plan.key():
        draft = None  # the file holds other lists than when drafted
    if draft is None:
        template = plan.template(body)
        found = long_strings(template)
    else:
        template, found = None, draft.body_found
    entries = plan.entries()
    if not found and not entries:
        text = None if draft is None else draft.body_text
        return [(own.REQUEST_BODY, _dumps(body) if text is None else text)]
    refs = ledger.place_refs(found, None if draft is None else draft.ids)
    if draft is None:
        attrs = [
            (own.REQUEST_TEMPLATE, _dumps(templated(template, refs))),
            (own.REQUEST_REFS, _dumps(refs)),
        ]
        if entries:
            attrs.append((own.REQUEST_LISTS, _dumps(entries)))
    else:
        attrs = [(own.REQUEST_TEMPLATE, draft.template), (own.REQUEST_REFS, draft.refs)]
        if draft.lists:
            attrs.append((own.REQUEST_LISTS, draft.lists))
    if ledger.loose:
        attrs.append((own.PIECES, _dumps(ledger.loose)))
    return attrs


def canonical_attributes(request: CanonicalRequest) -> Attributes:
    """The canonical request, for an exchange whose exact body is not known."""
    canonical: dict[str, JSON] = {
        "model": request.model,
        "system": request.system,
        "messages": request.messages,
        "tools": request.tools,
        "params": request.params,
    }
    return [(own.REQUEST_CANONICAL, _dumps(canonical))]


def format_version(plan: ListPlan | None) -> int:
    """The span format a span needs: the newest only when it refers to earlier lists."""
    if plan is not None and plan.splices:
        return own.SPAN_FORMAT_VERSION
    return own.PIECES_FORMAT_VERSION
