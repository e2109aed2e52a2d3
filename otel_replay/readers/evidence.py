"""What a model-call span shows a run's bypass check (``session.bypass``): whether the call
was answered (``registry.answered``), and the texts its request held, by which the check
tells it from the calls the gateway served. ``cannot_judge`` says, for ``doctor``, why a
span leaves the check unable to tell whether its call went around the gateway."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.core.exchange import CanonicalRequest, Exchange
from otel_replay.readers.registry import answered, model_call

__all__ = ["NO_ANSWER", "NO_TEXT", "TEXT_HEAD", "cannot_judge", "request_texts"]

TEXT_HEAD = 200
"""The characters of each recorded text compared (instrumentations may cut long ones)."""

NO_ANSWER = (
    "show no answer (no response id, output messages or token usage): a run never counts "
    "them as calls that went around the gateway"
)
NO_TEXT = "record no request text: a run tells them from the gateway's calls by their time alone"


def request_texts(request: CanonicalRequest) -> tuple[str, ...] | None:
    """The texts of a canonical request's system prompt and messages, whitespace folded
    and cut to their heads (``TEXT_HEAD``); None when the request's messages were not
    recorded or hold no text."""
    if "messages" not in request.known:
        return None
    texts = []
    for part in _parts(request.system, request.messages):
        text = part.get("content") if part.get("type") == "text" else None
        if isinstance(text, str) and text.strip():
            texts.append(" ".join(text.split())[:TEXT_HEAD])
    return tuple(dict.fromkeys(texts)) or None


def _parts(system: Any, messages: Any) -> Iterator[dict[str, Any]]:
    for part in system if isinstance(system, list) else ():
        if isinstance(part, dict):
            yield part
    for message in messages if isinstance(messages, list) else ():
        parts = message.get("parts") if isinstance(message, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict):
                yield part


def cannot_judge(span: Span, attrs: Mapping[str, Any], read: Exchange | None) -> str | None:
    """Why a run's bypass check cannot judge the model call ``span`` stands for (``read``:
    the exchange a reader made of it), or None when it can."""
    if model_call(span, attrs) is None:
        return None  # the gateway's own span, or no call a run watches
    if not answered(span, attrs):
        return NO_ANSWER
    if read is None or request_texts(read.request) is None:
        return NO_TEXT
    return None
