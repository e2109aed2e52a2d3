"""Reader for Claude Code's raw API body log events.

With ``OTEL_LOG_RAW_API_BODIES=1`` (and ``CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1``) Claude
Code emits, per model call, an ``api_request_body`` log event and then an
``api_response_body`` one, each with the JSON body in its ``body`` attribute, cut at 60 KB
(``body_truncated``): a default Claude Code request, two dozen tool schemas and a long
system prompt, is often longer. With ``OTEL_LOG_RAW_API_BODIES=file:DIR`` the events carry
``body_ref`` instead, the path of a file in DIR holding the whole body; it is read where
the path points, else by its name in ``body_dirs`` (the trace files' folders, for a DIR
copied along with the traces). Only a file named ``*.request.json`` / ``*.response.json``
holding a JSON object of at most ``MAX_BODY_FILE`` bytes is read.

A logged request body holds ``betas``, which the client sends as the ``anthropic-beta``
header and not in the body: the exchange leaves it out, as the gateway's recording of the
same call does. Events are named by the record's ``event_name``, its ``event.name``
attribute or its body text (``claude_code.api_request_body``). A response pairs with the
request of the same ``request_body_id``, else with the last request of its ``session.id``.

Every model call Claude Code reports (``api_request`` / ``api_error``) is counted per
source (``service.name`` and ``service.version``) in a :class:`Tally`, with the reason each
one that could not be read was skipped and the setting that fixes it (:class:`Skip`).

``places`` are the working and home directories the first request read names (its
``Primary working directory`` or ``CWD:`` line, and the folder holding ``.claude/projects``
in its memory path): a cassette built from these events replays elsewhere as one recorded
by the gateway does.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from otel_replay import providers
from otel_replay.core import genai
from otel_replay.core.exchange import JSON, Exchange
from otel_replay.core.ids import hex_id
from otel_replay.readers import view
from otel_replay.readers.rebuild import replay_response

__all__ = ["MAX_BODY_FILE", "ClaudeCodeReader", "Skip", "Tally", "event_name"]

REQUEST = "api_request_body"
RESPONSE = "api_response_body"
CALLS = ("api_request", "api_error")
MAX_BODY_FILE = 32 * 1024 * 1024
"""The largest body file read (the gateway accepts no larger request body)."""
_MAX_PENDING = 4096
_BODY_FILE_SUFFIXES = (".request.json", ".response.json")
_Pending = tuple[dict[str, Any], LogRecord]  # a request body, and the event that carried it
_CWD = re.compile(r"^(?: - Primary working directory|CWD): (\S[^\n]*?)\s*$", re.M)
_HOME = re.compile(r"`([^`\n]+?)[/\\]\.claude[/\\]projects[/\\]")


@dataclass(frozen=True, slots=True)
class Skip:
    """Why a model call was not read, and the setting that would make it readable."""

    reason: str
    fix: str


FILE_MODE = "OTEL_LOG_RAW_API_BODIES=file:DIR (whole bodies written to files)"
TRUNCATED = Skip("request or response body cut at 60 KB (body_truncated)", FILE_MODE)
NOT_JSON = Skip("body is not a JSON object", FILE_MODE)
NO_BODY = Skip(
    "no body logged",
    "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1 and " + FILE_MODE,
)
NO_FILE = Skip(
    "body file not found (body_ref)",
    "build on the machine that wrote DIR, or copy DIR's files beside the traces",
)
BAD_FILE = Skip(
    "body file unreadable, too large or not a JSON object (body_ref)",
    "keep the files of OTEL_LOG_RAW_API_BODIES=file:DIR as Claude Code wrote them",
)
FAILED = Skip(
    "the call failed (api_error): no response body is logged for it",
    "record through the gateway (otel-replay record), which keeps failures",
)
NO_RESPONSE = Skip(
    "no response body event for the request",
    "let Claude Code exit on its own so it exports every event",
)


@dataclass(slots=True)
class Tally:
    """What one source showed: model calls reported, exchanges read, bodies skipped."""

    calls: int = 0
    requests: int = 0
    read: int = 0
    skipped: Counter[Skip] = field(default_factory=Counter)

    @property
    def seen(self) -> int:
        """Model calls the source showed (reported, or logged with a body)."""
        return max(self.calls, self.requests)

    def reasons(self) -> Counter[Skip]:
        """Every call not read, by reason (a call with no body event counts as such)."""
        found = Counter(self.skipped)
        unaccounted = self.seen - self.read - sum(self.skipped.values())
        no_body = min(max(self.calls - self.requests, 0), unaccounted)
        if no_body > 0:
            found[NO_BODY] += no_body
        if unaccounted > no_body:
            found[NO_RESPONSE] += unaccounted - no_body
        return found

    def describe(self, source: str) -> str:
        """``claude-code 2.1.332: 2 model calls, 0 replayable; 2 skipped: … (fix: …)``."""
        seen = self.seen
        text = f"{source}: {seen} model call{'s' if seen != 1 else ''}, {self.read} replayable"
        reasons = self.reasons()
        if reasons:
            parts = [f"{n} {skip.reason} (fix: {skip.fix})" for skip, n in reasons.items()]
            text += "; skipped: " + "; ".join(parts)
        return text


def event_name(record: LogRecord, attrs: Mapping[str, Any]) -> str:
    """The event's short name (``api_request_body``), whichever way it was written."""
    name = getattr(record, "event_name", "") or attrs.get(genai.EVENT_NAME) or ""
    if not name and record.body.WhichOneof("value") == "string_value":
        name = record.body.string_value
    return str(name).removeprefix("claude_code.")


def source_name(resource: Mapping[str, Any]) -> str:
    """``service.name service.version`` of a resource (``claude-code`` when unnamed)."""
    name = str(resource.get(genai.SERVICE_NAME) or "claude-code")
    version = resource.get("service.version")
    return f"{name} {version}" if version else name


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() == "true"


class ClaudeCodeReader:
    """Pairs request and response body events into exchanges and tallies every call.

    Holds at most ``_MAX_PENDING`` requests waiting for their response."""

    def __init__(self, body_dirs: Iterable[Path] = ()) -> None:
        self.body_dirs = tuple(dict.fromkeys(Path(d) for d in body_dirs))
        self.tallies: dict[str, Tally] = {}
        self._pending: dict[str, _Pending | None] = {}
        self._latest: dict[str, str] = {}  # session → key of its last request
        self.places: tuple[str, str] | None = None

    def feed(
        self,
        record: LogRecord,
        attrs: Mapping[str, Any],
        resource: Mapping[str, Any] | None = None,
    ) -> Exchange | None:
        """The exchange completed by this log record, if any."""
        name = event_name(record, attrs)
        source = source_name(resource or {})
        tally = self.tallies.get(source)
        if tally is None:
            if name not in (REQUEST, RESPONSE, *CALLS):
                return None
            tally = self.tallies[source] = Tally()
        if name in CALLS:
            tally.calls += 1
            if name == "api_error" and self._pending.pop(self._key(attrs), None) is not None:
                tally.skipped[FAILED] += 1
            return None
        if name == REQUEST:
            tally.requests += 1
            body, skip = self._body(attrs)
            if skip is not None:
                tally.skipped[skip] += 1
            self._hold(attrs, None if body is None else (_as_sent(body), record))
            return None
        if name != RESPONSE:
            return None
        key = self._key(attrs)
        if key not in self._pending:
            return None  # a response whose request was not seen
        pending = self._pending.pop(key)
        if pending is None:
            return None  # its request was skipped, and counted
        body, skip = self._body(attrs)
        if body is None:
            tally.skipped[skip or NO_BODY] += 1
            return None
        tally.read += 1
        if self.places is None:
            self.places = _places(pending[0])
        return _exchange(pending[0], pending[1], body, record)

    def _key(self, attrs: Mapping[str, Any]) -> str:
        """The pending request a response answers: by request id, else its session's last."""
        session = str(attrs.get("session.id", ""))
        request_id = attrs.get("request_body_id")
        if request_id and f"id:{request_id}" in self._pending:
            key = f"id:{request_id}"
        else:
            key = self._latest.get(session, f"session:{session}")
        if self._latest.get(session) == key:
            del self._latest[session]
        return key

    def _hold(self, attrs: Mapping[str, Any], pending: _Pending | None) -> None:
        session = str(attrs.get("session.id", ""))
        request_id = attrs.get("request_body_id")
        key = f"id:{request_id}" if request_id else f"session:{session}"
        self._pending.pop(key, None)
        for held in (self._pending, self._latest):
            if len(held) >= _MAX_PENDING:
                held.pop(next(iter(held)))
        self._pending[key] = pending
        self._latest[session] = key

    def _body(self, attrs: Mapping[str, Any]) -> tuple[dict[str, Any] | None, Skip | None]:
        """The event's body, or why there is none."""
        ref = attrs.get("body_ref")
        if isinstance(ref, str) and ref:
            return self._body_file(ref)
        text = attrs.get("body")
        if not isinstance(text, str):
            return None, NO_BODY
        if _truthy(attrs.get("body_truncated")):
            return None, TRUNCATED
        try:
            body = json.loads(text)
        except ValueError:
            return None, NOT_JSON
        return (body, None) if isinstance(body, dict) else (None, NOT_JSON)

    def _body_file(self, ref: str) -> tuple[dict[str, Any] | None, Skip | None]:
        written = Path(ref)
        if not written.name.endswith(_BODY_FILE_SUFFIXES):
            return None, BAD_FILE
        candidates = [written, *(folder / written.name for folder in self.body_dirs)]
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            return None, NO_FILE
        try:
            if path.stat().st_size > MAX_BODY_FILE:
                return None, BAD_FILE
            body = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return None, BAD_FILE
        return (body, None) if isinstance(body, dict) else (None, BAD_FILE)


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def _places(request: dict[str, Any]) -> tuple[str, str] | None:
    """The working and home directories a request names, when it names the first."""
    cwd = home = ""
    for text in _texts([request.get("system"), request.get("messages")]):
        found = not cwd and _CWD.search(text)
        if found:
            cwd = found.group(1)
        found = not home and _HOME.search(text)
        if found:
            home = found.group(1)
        if cwd and home:
            break
    return (cwd, home) if cwd else None


def _as_sent(body: dict[str, Any]) -> dict[str, Any]:
    """The request body as it went over the wire: ``betas`` travel as a header."""
    return {k: v for k, v in body.items() if k != "betas"}


def _time(record: LogRecord) -> int:
    return record.time_unix_nano or record.observed_time_unix_nano


def _exchange(
    request: dict[str, Any], sent: LogRecord, response: dict[str, JSON], received: LogRecord
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
