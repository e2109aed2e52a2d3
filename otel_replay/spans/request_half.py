"""The request's half of a recorded span: its GenAI contents and its exact body, written
against what the trace file holds (``spans.pieces``: long strings once per file;
``spans.lists``: list fields by reference to earlier spans' lists, tool definitions by
name once written whole). ``spans.encode`` puts the rest of the span around them."""

from __future__ import annotations

from otel_replay.core import genai, jsontext
from otel_replay.core.exchange import JSON, CanonicalRequest
from otel_replay.spans import attributes as own
from otel_replay.spans.draft import RequestDraft, contents
from otel_replay.spans.lists import ListPlan
from otel_replay.spans.pieces import Ledger, long_strings, templated
from otel_replay.spans.sinks import Sink

__all__ = ["add_body", "add_contents", "content", "format_version", "plan_lists"]


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


def add_contents(
    attrs: Sink, request: CanonicalRequest, ledger: Ledger | None, draft: RequestDraft | None
) -> None:
    """The request's GenAI content attributes (input messages, system instructions, tool
    definitions: by name only where the file holds them whole)."""
    for attribute, value in contents(request):
        drafted = draft
        if attribute == genai.TOOL_DEFINITIONS:
            value, short = (value, False) if ledger is None else ledger.lists.tool_view(value)
            if draft is not None and draft.tools_short != short:
                drafted = None  # the file holds other tools than when drafted
            if short:
                text = None if drafted is None else drafted.contents[attribute][2]
                attrs.text(attribute, _dumps(value) if text is None else text)
                continue
        attrs.text(attribute, content(ledger, attribute, value, drafted))


def plan_lists(body: JSON, ledger: Ledger | None, draft: RequestDraft | None) -> ListPlan | None:
    """How the body's list fields are written against the file (None without a ledger);
    taken as the span's lists."""
    if ledger is None or body is None:
        return None
    plan = ledger.lists.plan(body)
    ledger.lists.take(plan)
    return plan


def add_body(
    attrs: Sink,
    body: JSON,
    ledger: Ledger | None,
    plan: ListPlan | None,
    draft: RequestDraft | None = None,
) -> None:
    """The exact request body: whole, or as a template whose long strings are pieces and
    whose list fields begin with earlier spans' lists (the texts are the draft's when its
    lists came out the same: a piece is named by its text)."""
    if ledger is None or plan is None:
        text = None if draft is None else draft.body_text
        attrs.text(own.REQUEST_BODY, _dumps(body) if text is None else text)
        return
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
        attrs.text(own.REQUEST_BODY, _dumps(body) if text is None else text)
        return
    refs = ledger.place_refs(found, None if draft is None else draft.ids)
    if draft is None:
        attrs.text(own.REQUEST_TEMPLATE, _dumps(templated(template, refs)))
        attrs.text(own.REQUEST_REFS, _dumps(refs))
        if entries:
            attrs.text(own.REQUEST_LISTS, _dumps(entries))
    else:
        attrs.text(own.REQUEST_TEMPLATE, draft.template)
        attrs.text(own.REQUEST_REFS, draft.refs)
        if draft.lists:
            attrs.text(own.REQUEST_LISTS, draft.lists)
    if ledger.loose:
        attrs.text(own.PIECES, _dumps(ledger.loose))


def format_version(plan: ListPlan | None) -> int:
    """The span format a span needs: the newest only when it refers to earlier lists."""
    if plan is not None and plan.splices:
        return own.SPAN_FORMAT_VERSION
    return own.PIECES_FORMAT_VERSION
