"""OpenAI Chat Completions and legacy completions streams ⇄ non-streamed bodies.

A stream is what the API sends with ``stream: true`` and ``include_usage``: a role chunk,
content (and refusal) deltas, tool calls announced with index, id, type and name and then
their arguments, a finish chunk, a usage chunk with ``choices: []``, then ``[DONE]``.
"""

from __future__ import annotations

from typing import Any

from otel_replay.core.exchange import JSON, SSEEvent
from otel_replay.providers.parts import as_dict, as_list, event_payloads, pieces, sse

DONE = SSEEvent(data="[DONE]")
_HEAD_EXTRA = ("service_tier", "system_fingerprint")


def _head(body: dict[str, Any], obj: str) -> dict[str, Any]:
    head = {
        "id": body.get("id"),
        "object": obj,
        "created": body.get("created"),
        "model": body.get("model"),
    }
    head.update({k: body[k] for k in _HEAD_EXTRA if k in body})
    return head


def _chunker(body: dict[str, Any], obj: str) -> Any:
    head = _head(body, obj)
    with_usage = body.get("usage") is not None

    def chunk(choices: list[JSON]) -> SSEEvent:
        data = {**head, "choices": choices}
        if with_usage:
            data["usage"] = None
        return sse(data)

    return chunk


def _choice_deltas(choice: dict[str, Any], index: int) -> list[dict[str, Any]]:
    """The deltas for one choice, finish chunk last."""
    message = as_dict(choice.get("message"))
    content = message.get("content")
    refusal = message.get("refusal")
    role_delta = {
        "role": message.get("role", "assistant"),
        "content": "" if isinstance(content, str) else None,
        "refusal": None,
    }
    deltas: list[dict[str, Any]] = [role_delta]
    if isinstance(content, str):
        deltas += [{"content": piece} for piece in pieces(content)]
    if isinstance(refusal, str):
        deltas += [{"refusal": piece} for piece in pieces(refusal)]
    for number, call in enumerate(as_list(message.get("tool_calls"))):
        call = as_dict(call)
        function = as_dict(call.get("function"))
        start = {
            "index": number,
            "id": call.get("id"),
            "type": call.get("type", "function"),
            "function": {"name": function.get("name"), "arguments": ""},
        }
        deltas.append({"tool_calls": [start]})
        arguments = function.get("arguments")
        for piece in pieces(arguments if isinstance(arguments, str) else ""):
            deltas.append({"tool_calls": [{"index": number, "function": {"arguments": piece}}]})
    chunks = [
        {"index": index, "delta": delta, "logprobs": None, "finish_reason": None}
        for delta in deltas
    ]
    finish: dict[str, Any] = {}
    if as_list(message.get("annotations")):
        finish["annotations"] = message["annotations"]
    chunks.append(
        {
            "index": index,
            "delta": finish,
            "logprobs": choice.get("logprobs"),
            "finish_reason": choice.get("finish_reason"),
        }
    )
    return chunks


def chat_stream(body: JSON) -> list[SSEEvent]:
    """The chunk sequence Chat Completions streams for a ``chat.completion`` body."""
    body = as_dict(body)
    chunk = _chunker(body, "chat.completion.chunk")
    events = []
    for position, choice in enumerate(as_list(body.get("choices"))):
        choice = as_dict(choice)
        index = choice.get("index", position)
        events += [chunk([c]) for c in _choice_deltas(choice, index)]
    if body.get("usage") is not None:
        events.append(
            sse({**_head(body, "chat.completion.chunk"), "choices": [], "usage": body["usage"]})
        )
    events.append(SSEEvent(data=DONE.data))
    return events


def _merge_logprobs(acc: JSON, logprobs: JSON) -> JSON:
    if not isinstance(logprobs, dict):
        return acc
    merged = dict(acc) if isinstance(acc, dict) else {}
    for key, value in logprobs.items():
        if isinstance(value, list):
            merged[key] = list(merged.get(key) or []) + value
        else:
            merged.setdefault(key, value)
    return merged


class _ChoiceState:
    """What the chunks of one choice have said so far."""

    def __init__(self) -> None:
        self.role = "assistant"
        self.content: list[str] | None = None
        self.refusal: list[str] | None = None
        self.annotations: list[JSON] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: JSON = None
        self.logprobs: JSON = None
        self.text: list[str] = []

    def apply(self, choice: dict[str, Any]) -> None:
        delta = as_dict(choice.get("delta"))
        if isinstance(delta.get("role"), str):
            self.role = delta["role"]
        if isinstance(delta.get("content"), str):
            self.content = [*(self.content or []), delta["content"]]
        if isinstance(delta.get("refusal"), str):
            self.refusal = [*(self.refusal or []), delta["refusal"]]
        self.annotations += as_list(delta.get("annotations"))
        for call in as_list(delta.get("tool_calls")):
            self._apply_call(as_dict(call))
        if isinstance(choice.get("text"), str):
            self.text.append(choice["text"])
        if choice.get("finish_reason") is not None:
            self.finish_reason = choice["finish_reason"]
        self.logprobs = _merge_logprobs(self.logprobs, choice.get("logprobs"))

    def _apply_call(self, call: dict[str, Any]) -> None:
        index = call.get("index", len(self.calls))
        state = self.calls.setdefault(
            index, {"id": None, "type": "function", "function": {"name": None, "arguments": ""}}
        )
        if call.get("id") is not None:
            state["id"] = call["id"]
        if call.get("type") is not None:
            state["type"] = call["type"]
        function = as_dict(call.get("function"))
        if function.get("name") is not None:
            state["function"]["name"] = function["name"]
        if isinstance(function.get("arguments"), str):
            state["function"]["arguments"] += function["arguments"]

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": self.role,
            "content": None if self.content is None else "".join(self.content),
            "refusal": None if self.refusal is None else "".join(self.refusal),
            "annotations": self.annotations,
        }
        if self.calls:
            message["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        return message


def _assemble(events: list[SSEEvent], obj: str) -> tuple[dict[str, Any], dict[int, _ChoiceState]]:
    body: dict[str, Any] = {}
    states: dict[int, _ChoiceState] = {}
    for payload in event_payloads(events):
        if not body:
            body = _head(payload, obj)
        for choice in as_list(payload.get("choices")):
            choice = as_dict(choice)
            states.setdefault(choice.get("index", 0), _ChoiceState()).apply(choice)
        if payload.get("usage") is not None:
            body["usage"] = payload["usage"]
    return body, states


def chat_body(events: list[SSEEvent]) -> JSON:
    """The ``chat.completion`` body a chunk sequence adds up to."""
    body, states = _assemble(events, "chat.completion")
    body["choices"] = [
        {
            "index": index,
            "message": states[index].message(),
            "logprobs": states[index].logprobs,
            "finish_reason": states[index].finish_reason,
        }
        for index in sorted(states)
    ]
    return body


def completions_stream(body: JSON) -> list[SSEEvent]:
    """The chunk sequence legacy completions streams for a ``text_completion`` body."""
    body = as_dict(body)
    chunk = _chunker(body, "text_completion")
    events = []
    for position, choice in enumerate(as_list(body.get("choices"))):
        choice = as_dict(choice)
        index = choice.get("index", position)
        text = choice.get("text")
        for piece in pieces(text if isinstance(text, str) else ""):
            events.append(
                chunk([{"text": piece, "index": index, "logprobs": None, "finish_reason": None}])
            )
        finish = choice.get("finish_reason")
        events.append(
            chunk(
                [
                    {
                        "text": "",
                        "index": index,
                        "logprobs": choice.get("logprobs"),
                        "finish_reason": finish,
                    }
                ]
            )
        )
    if body.get("usage") is not None:
        events.append(
            sse({**_head(body, "text_completion"), "choices": [], "usage": body["usage"]})
        )
    events.append(SSEEvent(data=DONE.data))
    return events


def completions_body(events: list[SSEEvent]) -> JSON:
    """The ``text_completion`` body a chunk sequence adds up to."""
    body, states = _assemble(events, "text_completion")
    body["choices"] = [
        {
            "text": "".join(states[index].text),
            "index": index,
            "logprobs": states[index].logprobs,
            "finish_reason": states[index].finish_reason,
        }
        for index in sorted(states)
    ]
    return body
