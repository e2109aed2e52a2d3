"""The stub upstream's conversation logic, shared by its provider surfaces: what the
model "says" is computed from the request, so the same request always gets the same
answer, and how answers are cut into stream events.

A user's text may script the turn, as a coding agent's prompt does: ``stub:call NAME
{json}`` makes the model call the offered tool ``NAME`` with those arguments (once: not
after a tool result), and ``stub:text`` makes it answer in text although tools are
offered. A directive is looked for in every user text, so one in the prompt still counts
when the agent adds text blocks of its own after it."""

from __future__ import annotations

import hashlib
import json
import re
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Directive",
    "Reply",
    "digest",
    "directive",
    "first_param",
    "has_tool_result",
    "last_text",
    "reply_to",
    "sse",
    "tokens",
    "words",
]

Reply = dict[str, Any] | list[bytes]
"""A JSON body, or the chunks of an SSE stream."""

VOICE: ContextVar[str] = ContextVar("voice", default="stub")
"""Who answers in text (set per request by the stub serving it): a second stub with
another voice stands for another model, answering the same request otherwise."""


def reply_to(text: str) -> str:
    """The text answer to ``text``: ``stub reply to: <text>`` in the default voice."""
    return f"{VOICE.get()} reply to: {text}"


def last_text(messages: list[Any]) -> str:
    """The last user or tool text (a ``system`` message among them is not one)."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "system":
            continue
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str) and content:
            return content
        if isinstance(content, list):
            for block in reversed(content):
                if not isinstance(block, dict):
                    continue
                if isinstance(block.get("text"), str):
                    return str(block["text"])
                if block.get("type") == "tool_result":
                    inner = block.get("content")
                    if isinstance(inner, str):
                        return inner
                    if isinstance(inner, list) and inner and isinstance(inner[0], dict):
                        return str(inner[0].get("text", ""))
        if isinstance(message, dict) and message.get("type") == "function_call_output":
            return str(message.get("output", ""))
    return ""


_DIRECTIVE = re.compile(r"stub:(?:call ([A-Za-z0-9_.-]+) (\{.*?\})(?=\s|$)|(text)\b)", re.S)


@dataclass(frozen=True, slots=True)
class Directive:
    """What a user's text asks of the stub: a tool to call with its arguments, or text
    (``tool`` None)."""

    tool: str | None = None
    arguments: dict[str, Any] | None = None


def directive(messages: list[Any]) -> Directive | None:
    """The last directive in the users' texts (``stub:call NAME {json}``, ``stub:text``)."""
    found: Directive | None = None
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = [content] if isinstance(content, str) else content or []
        for block in blocks:
            text = (
                block
                if isinstance(block, str)
                else block.get("text")
                if isinstance(block, dict)
                else None
            )
            if not isinstance(text, str) or "stub:" not in text:
                continue
            for match in _DIRECTIVE.finditer(text):
                if match.group(3):
                    found = Directive()
                    continue
                try:
                    arguments = json.loads(match.group(2))
                except ValueError:
                    continue
                if isinstance(arguments, dict):
                    found = Directive(match.group(1), arguments)
    return found


def has_tool_result(messages: list[Any]) -> bool:
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool" or message.get("type") == "function_call_output":
            return True
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            return True
    return False


def first_param(schema: Any) -> str:
    if isinstance(schema, dict):
        required = schema.get("required")
        if isinstance(required, list) and required:
            return str(required[0])
        props = schema.get("properties")
        if isinstance(props, dict) and props:
            return str(next(iter(props)))
    return "input"


def digest(value: Any, n: int = 12) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def tokens(text: str) -> int:
    return max(1, len(text.split()))


def words(text: str) -> list[str]:
    """The text cut into stream deltas, one word each (spaces kept)."""
    parts = text.split(" ")
    return [w if i == len(parts) - 1 else w + " " for i, w in enumerate(parts)]


def sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()
