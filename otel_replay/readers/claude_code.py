"""Reader for Claude Code's raw API body log events.

With ``OTEL_LOG_RAW_API_BODIES=1`` (and ``CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1``) Claude
Code emits, per model call, an ``api_request_body`` log event and then an
``api_response_body`` one, each with the JSON body in its ``body`` attribute (truncated at
about 60 KB; a truncated body is skipped). Events are named by the record's ``event_name``,
its ``event.name`` attribute or its body text (``claude_code.api_request_body``). A request
pairs with the next response of the same ``session.id``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from otel_replay import providers
from otel_replay.core import genai
from otel_replay.core.exchange import JSON, Exchange
from otel_replay.core.ids import hex_id
from otel_replay.readers import view
from otel_replay.readers.rebuild import replay_response

__all__ = ["ClaudeCodeReader", "event_name"]

REQUEST = "api_request_body"
RESPONSE = "api_response_body"
_MAX_SESSIONS = 4096


def event_name(record: LogRecord, attrs: Mapping[str, Any]) -> str:
    """The event's short name (``api_request_body``), whichever way it was written."""
    name = getattr(record, "event_name", "") or attrs.get(genai.EVENT_NAME) or ""
    if not name and record.body.WhichOneof("value") == "string_value":
        name = record.body.string_value
    return str(name).removeprefix("claude_code.")


def _body(attrs: Mapping[str, Any]) -> JSON:
    text = attrs.get("body")
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:  # truncated or not JSON
        return None


class ClaudeCodeReader:
    """Pairs request and response body events into exchanges, one session at a time.

    Holds at most one pending request per session (and at most ``_MAX_SESSIONS``)."""

    def __init__(self) -> None:
        self._pending: dict[str, tuple[dict[str, Any], LogRecord]] = {}

    def feed(self, record: LogRecord, attrs: Mapping[str, Any]) -> Exchange | None:
        """The exchange completed by this log record, if any."""
        name = event_name(record, attrs)
        if name not in (REQUEST, RESPONSE):
            return None
        session = str(attrs.get("session.id", ""))
        body = _body(attrs)
        if name == REQUEST:
            self._pending.pop(session, None)
            if isinstance(body, dict):
                if len(self._pending) >= _MAX_SESSIONS:
                    self._pending.pop(next(iter(self._pending)))
                self._pending[session] = (body, record)
            return None
        pending = self._pending.pop(session, None)
        if pending is None or not isinstance(body, dict):
            return None
        return _exchange(pending[0], pending[1], body, record)


def _time(record: LogRecord) -> int:
    return record.time_unix_nano or record.observed_time_unix_nano


def _exchange(
    request: dict[str, Any], sent: LogRecord, response: dict[str, Any], received: LogRecord
) -> Exchange:
    api = providers.get("anthropic")
    endpoint = api.endpoint("messages", model=view.as_str(request.get("model")))
    stream = api.wants_stream(request)
    return Exchange(
        provider="anthropic",
        operation="messages",
        request=api.canonical(endpoint, request),
        response=replay_response("anthropic", "messages", response, stream),
        raw_request=request,
        stream=stream,
        start_ns=_time(sent),
        end_ns=_time(received),
        trace_id=hex_id(sent.trace_id),
        span_id=hex_id(sent.span_id),
        source="claude-code",
    )
