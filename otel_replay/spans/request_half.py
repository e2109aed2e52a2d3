"""The request's half of a recorded span: its GenAI contents and its exact body, written
against what the trace file holds (``spans.pieces``: long strings once per file;
``spans.lists``: list fields by reference to earlier spans' lists, tool definitions by
name once written whole). Each function gives its attributes as ``(key, text)`` pairs, in
the span's order; ``spans.encode`` writes them and puts the rest of the span around them."""

from __future__ import annotations

from otel_replay.core import genai, jsontext
from otel_replay.core.exchange import JSON, CanonicalRequest
from otel_replay.spans import attributes as own
from otel_replay.spans.draft import RequestDraft
from otel_replay.spans.lists import ListPlan
from otel_replay.spans.pieces import Ledger, long_strings, templated

__all__ = ["begin_span", "body_attributes", "content", "contents_attributes", "format_version"]

Attributes = list[tuple[str, str]]


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


def format_version(plan: ListPlan | None) -> int:
    """The span format a span needs: the newest only when it refers to earlier lists."""
    if plan is not None and plan.splices:
        return own.SPAN_FORMAT_VERSION
    return own.PIECES_FORMAT_VERSION
