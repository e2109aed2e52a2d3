"""OpenAI Responses API streams ⇄ non-streamed ``response`` bodies.

The stream announces the response (``response.created``, ``response.in_progress``), then
each output item: ``output_item.added``, its content parts and text deltas (or function
call argument deltas, or reasoning summary deltas), ``output_item.done``; and ends with
``response.completed`` (or ``.incomplete`` / ``.failed``) carrying the whole body. Every
event has a ``sequence_number`` and an ``event:`` name equal to its type.
"""

from __future__ import annotations

from typing import Any

from otel_replay.core.exchange import JSON, SSEEvent
from otel_replay.providers.parts import as_dict, as_list, as_str, event_payloads, pieces, sse

_FINAL = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "failed": "response.failed",
}
_FINAL_TYPES = frozenset(_FINAL.values())


class _Emitter:
    """Numbers events in order."""

    def __init__(self) -> None:
        self.events: list[SSEEvent] = []

    def __call__(self, kind: str, **fields: JSON) -> None:
        data = {"type": kind, "sequence_number": len(self.events), **fields}
        self.events.append(sse(data, event=kind))


def _text_part(emit: _Emitter, where: dict[str, JSON], part: dict[str, Any]) -> None:
    text = as_str(part.get("text"))
    empty = {**part, "text": "", "annotations": []}
    if "logprobs" in part:
        empty["logprobs"] = []
    emit("response.content_part.added", **where, part=empty)
    logprobs = part.get("logprobs", [])
    for piece in pieces(text):
        emit("response.output_text.delta", **where, delta=piece, logprobs=[])
    for number, annotation in enumerate(as_list(part.get("annotations"))):
        emit(
            "response.output_text.annotation.added",
            **where,
            annotation_index=number,
            annotation=annotation,
        )
    emit("response.output_text.done", **where, text=text, logprobs=logprobs)
    emit("response.content_part.done", **where, part=part)


def _refusal_part(emit: _Emitter, where: dict[str, JSON], part: dict[str, Any]) -> None:
    refusal = as_str(part.get("refusal"))
    emit("response.content_part.added", **where, part={**part, "refusal": ""})
    for piece in pieces(refusal):
        emit("response.refusal.delta", **where, delta=piece)
    emit("response.refusal.done", **where, refusal=refusal)
    emit("response.content_part.done", **where, part=part)


def _message_item(emit: _Emitter, index: int, item: dict[str, Any]) -> None:
    emit(
        "response.output_item.added",
        output_index=index,
        item={**item, "status": "in_progress", "content": []},
    )
    for number, part in enumerate(as_list(item.get("content"))):
        part = as_dict(part)
        where: dict[str, JSON] = {
            "item_id": item.get("id"),
            "output_index": index,
            "content_index": number,
        }
        if part.get("type") == "output_text":
            _text_part(emit, where, part)
        elif part.get("type") == "refusal":
            _refusal_part(emit, where, part)
        else:
            emit("response.content_part.added", **where, part=part)
            emit("response.content_part.done", **where, part=part)


def _function_call_item(emit: _Emitter, index: int, item: dict[str, Any]) -> None:
    added = {**item, "status": "in_progress", "arguments": ""}
    emit("response.output_item.added", output_index=index, item=added)
    arguments = as_str(item.get("arguments"))
    where: dict[str, JSON] = {"item_id": item.get("id"), "output_index": index}
    for piece in pieces(arguments):
        emit("response.function_call_arguments.delta", **where, delta=piece)
    emit(
        "response.function_call_arguments.done", **where, name=item.get("name"), arguments=arguments
    )


def _reasoning_item(emit: _Emitter, index: int, item: dict[str, Any]) -> None:
    added = {**item, "summary": []}
    if "status" in item:
        added["status"] = "in_progress"
    emit("response.output_item.added", output_index=index, item=added)
    for number, summary in enumerate(as_list(item.get("summary"))):
        summary = as_dict(summary)
        text = as_str(summary.get("text"))
        where: dict[str, JSON] = {
            "item_id": item.get("id"),
            "output_index": index,
            "summary_index": number,
        }
        emit("response.reasoning_summary_part.added", **where, part={**summary, "text": ""})
        for piece in pieces(text):
            emit("response.reasoning_summary_text.delta", **where, delta=piece)
        emit("response.reasoning_summary_text.done", **where, text=text)
        emit("response.reasoning_summary_part.done", **where, part=summary)


def responses_stream(body: JSON) -> list[SSEEvent]:
    """The event sequence the Responses API streams for a ``response`` body."""
    body = as_dict(body)
    emit = _Emitter()
    opening = {**body, "status": "in_progress", "output": [], "usage": None}
    for key in ("incomplete_details", "error", "completed_at"):
        if key in body:
            opening[key] = None
    emit("response.created", response=opening)
    emit("response.in_progress", response=opening)
    for index, item in enumerate(as_list(body.get("output"))):
        item = as_dict(item)
        kind = item.get("type")
        if kind == "message":
            _message_item(emit, index, item)
        elif kind == "function_call":
            _function_call_item(emit, index, item)
        elif kind == "reasoning":
            _reasoning_item(emit, index, item)
        else:
            emit("response.output_item.added", output_index=index, item=item)
        emit("response.output_item.done", output_index=index, item=item)
    emit(_FINAL.get(str(body.get("status")), "response.completed"), response=body)
    return emit.events


def _apply(items: dict[int, dict[str, Any]], payload: dict[str, Any]) -> None:
    """Fold one non-final event into the items under construction (the payloads are
    parsed afresh for each reassembly and held by nothing else, so they are folded into
    as they are)."""
    kind = payload.get("type")
    index = payload.get("output_index")
    if kind in ("response.output_item.added", "response.output_item.done"):
        if isinstance(index, int) and isinstance(payload.get("item"), dict):
            items[index] = payload["item"]
        return
    item = items.get(index) if isinstance(index, int) else None
    if item is None:
        return
    if kind == "response.content_part.added":
        item.setdefault("content", []).append(payload.get("part"))
    elif kind == "response.output_text.delta":
        part = as_dict(as_list(item.get("content"))[payload.get("content_index", 0)])
        part["text"] = str(part.get("text", "")) + str(payload.get("delta", ""))
    elif kind == "response.function_call_arguments.delta":
        item["arguments"] = str(item.get("arguments", "")) + str(payload.get("delta", ""))


def responses_body(events: list[SSEEvent]) -> JSON:
    """The ``response`` body an event sequence adds up to.

    A complete stream's final event carries it; a broken one is rebuilt from the last
    snapshot and the output items seen so far.
    """
    payloads = event_payloads(events)
    for payload in payloads:  # a complete stream: its final event, whatever came before
        if payload.get("type") in _FINAL_TYPES and isinstance(payload.get("response"), dict):
            return payload["response"]
    snapshot: dict[str, Any] = {}
    items: dict[int, dict[str, Any]] = {}
    for payload in payloads:
        if isinstance(payload.get("response"), dict):
            snapshot = payload["response"]
            continue
        try:
            _apply(items, payload)
        except (IndexError, TypeError):
            continue
    if not snapshot and not items:
        return {}
    snapshot["output"] = [items[i] for i in sorted(items)]
    return snapshot
