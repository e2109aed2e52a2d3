"""The canonical parts form (the OpenTelemetry GenAI "parts" form), and the small JSON and
SSE helpers the provider modules share.

A canonical message is ``{"role": …, "parts": [...]}`` with parts of type ``text``,
``tool_call``, ``tool_call_response``, ``reasoning``, ``refusal``, ``tokens`` and generic
parts that keep a provider block whole. The constructors here are the only place a part's
shape is written: the providers' request readers (body → canonical), their response views
and the span readers (span → canonical) all build parts with them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from otel_replay.core import jsontext
from otel_replay.core.exchange import JSON, SSEEvent

SYSTEM_ROLES = frozenset({"system", "developer"})
"""Roles whose leading messages are the system instructions, not conversation."""

_PIECE = re.compile(r"\s*\S+|\s+")


def strip_prefix(path: str) -> str:
    """The path from ``/v1`` on (a base URL's own prefix removed), without a trailing '/'."""
    base, sep, query = path.partition("?")
    at = base.find("/v1/")
    if at < 0 and base.endswith("/v1"):
        at = len(base) - 3
    if at > 0:
        base = base[at:]
    if len(base) > 1:
        base = base.rstrip("/")
    return base + sep + query


def dumps(value: JSON) -> str:
    """Compact JSON, the way provider streams serialise their data lines."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def loads_or_none(text: str) -> JSON:
    """Parse JSON text, or None when it is not JSON."""
    try:
        return jsontext.loads(text)
    except (ValueError, TypeError):
        return None


def short_hash(value: JSON, length: int = 24) -> str:
    """A stable hex digest of a JSON value, for deterministic ids."""
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:length]


def pieces(text: str) -> list[str]:
    """Split text into word-sized deltas the way a model streams it (lossless)."""
    if not text:
        return []
    found = _PIECE.findall(text)
    return found if "".join(found) == text else [text]


def as_dict(value: JSON) -> dict[str, Any]:
    """The value when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: JSON) -> list[Any]:
    """The value when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def as_str(value: JSON) -> str:
    """The value when it is a string, else an empty one."""
    return value if isinstance(value, str) else ""


def as_int(value: JSON) -> int:
    """An integer count, or 0 when missing or not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value)


def semconv_usage(
    usage: Mapping[str, Any], inputs: str, outputs: str, read: str, write: str
) -> dict[str, int]:
    """Semconv usage from a provider's usage object (its field names given) that counts
    cached input tokens apart, as Anthropic's and Bedrock's do: semconv input tokens
    include them."""
    cache_read, cache_write = as_int(usage.get(read)), as_int(usage.get(write))
    result = {
        "input_tokens": as_int(usage.get(inputs)) + cache_read + cache_write,
        "output_tokens": as_int(usage.get(outputs)),
    }
    if read in usage:
        result["cache_read.input_tokens"] = cache_read
    if write in usage:
        result["cache_creation.input_tokens"] = cache_write
    return result


# --- parts ------------------------------------------------------------------------------


def text_part(content: JSON) -> dict[str, Any]:
    return {"type": "text", "content": content}


def reasoning_part(content: JSON) -> dict[str, Any]:
    return {"type": "reasoning", "content": content}


def refusal_part(content: JSON) -> dict[str, Any]:
    return {"type": "refusal", "content": content}


def tokens_part(tokens: JSON) -> dict[str, Any]:
    """A prompt given as token ids."""
    return {"type": "tokens", "tokens": tokens}


def tool_response_part(call_id: JSON, response: JSON) -> dict[str, Any]:
    """A tool's result (``response``: its text, or its parts) for the call ``call_id``."""
    return {"type": "tool_call_response", "id": call_id, "response": response}


def message(role: JSON, parts: list[dict[str, Any]], name: JSON = None) -> dict[str, Any]:
    """A canonical message; a role that is not text reads as ``user``."""
    out: dict[str, Any] = {"role": role if isinstance(role, str) else "user", "parts": parts}
    if name is not None:
        out["name"] = name
    return out


def drop_empty_text(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Without empty text parts: ``""``, ``None`` and no content all say nothing."""
    return [p for p in parts if not (p.get("type") == "text" and p.get("content") == "")]


def parse_arguments(arguments: JSON) -> JSON:
    """Tool-call arguments as an object when the JSON text parses, else as given."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def text_or_parts(content: JSON, parts_of: Callable[[JSON], list[dict[str, Any]]]) -> JSON:
    """A tool result's content: as given when text or absent, else the text when its parts
    (read by the provider's ``parts_of``) are all text, else the parts."""
    if content is None or isinstance(content, str):
        return content
    parts = parts_of(content)
    if parts and all(p["type"] == "text" for p in parts):
        return "".join(p["content"] for p in parts)
    return parts


def arguments_text(arguments: JSON) -> str:
    """Tool-call arguments as the JSON text a provider sends."""
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return "{}"
    return dumps(arguments)


def tool_call_part(call_id: JSON, name: JSON, arguments: JSON) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "id": call_id,
        "name": name,
        "arguments": parse_arguments(arguments),
    }


def generic_part(block: Mapping[str, Any], drop: Iterable[str] = ()) -> dict[str, Any]:
    """A provider block kept whole as a generic part (its ``type`` first)."""
    skip = {"type", *drop}
    part: dict[str, Any] = {"type": str(block.get("type", "unknown"))}
    part.update({k: v for k, v in block.items() if k not in skip})
    return part


def raw_part(value: JSON) -> dict[str, Any]:
    """A generic part for a value that is not a block at all."""
    return {"type": "raw", "value": value}


def text_of(parts: Iterable[JSON]) -> str | None:
    """The concatenated text of the text parts, or None when there are none."""
    texts = [p["content"] for p in parts if isinstance(p, dict) and p.get("type") == "text"]
    strings = [t for t in texts if isinstance(t, str)]
    return "".join(strings) if strings else None


def parts_of(value: JSON) -> list[dict[str, Any]]:
    """The parts of a canonical message, tolerating odd shapes."""
    return [p for p in as_list(as_dict(value).get("parts")) if isinstance(p, dict)]


def tool_calls_of(parts: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in parts if p.get("type") == "tool_call"]


TOOL_DEFINITION_KEYS = ("type", "name", "description", "parameters")
"""The keys of a GenAI tool definition (``function_tool``'s own)."""


def function_tool(
    name: JSON, description: JSON, parameters: JSON, extra: Mapping[str, Any]
) -> dict[str, Any]:
    """A ``gen_ai.tool.definitions`` entry for a function tool."""
    tool: dict[str, Any] = {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": parameters,
    }
    tool.update(extra)
    return tool


def sse(data: JSON, event: str | None = None) -> SSEEvent:
    """One SSE event whose data is the compact JSON of ``data``."""
    return SSEEvent(data=dumps(data), event=event)


def event_payloads(events: Iterable[SSEEvent]) -> list[dict[str, Any]]:
    """The JSON object payloads of recorded events; ``[DONE]`` and non-JSON are skipped."""
    payloads = []
    for event in events:
        data = loads_or_none(event.data)
        if isinstance(data, dict):
            payloads.append(data)
    return payloads
