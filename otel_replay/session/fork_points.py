"""Where a fork goes live: a call number, or a point read off ``report`` or ``diff``.

``--live-from`` takes the number of a model call (1-based, as ``diff`` counts them), or
a selector over the recorded calls: ``tool:NAME``, the call after the result of tool
NAME (the first whose request carries it), or ``text:TEXT``, the first call whose
request holds TEXT. Which provider a model name belongs to is a table too, for the check
that a fork's model can go where the calls go.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from otel_replay.core.errors import ConfigError
from otel_replay.core.exchange import Exchange

__all__ = ["SELECTORS", "fork_point", "parse_live_from", "provider_of_model"]

SELECTORS = ("tool:", "text:")

_USAGE = "--live-from takes a model call's number (1, 2, ...), tool:NAME or text:TEXT"

MODEL_FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("openai", ("gpt-", "chatgpt-", "o1", "o3", "o4", "codex-", "text-embedding-", "davinci-")),
    ("anthropic", ("claude-",)),
    ("gemini", ("gemini-", "gemma-")),
)
"""The providers whose models are known by the start of their names."""


def provider_of_model(model: str) -> str | None:
    """The provider whose model ``model`` is (``claude-…``: anthropic), None when unknown."""
    name = model.lower().rsplit("/", 1)[-1]
    for provider, starts in MODEL_FAMILIES:
        if name.startswith(starts):
            return provider
    return None


def parse_live_from(value: str) -> int | str:
    """``--live-from``'s value: a call number, or a selector kept as written."""
    text = value.strip()
    if text.startswith(SELECTORS):
        if not text.partition(":")[2]:
            raise ConfigError(f"--live-from {value}: name the tool or the text after the colon")
        return text
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{_USAGE}, not {value!r}") from None


def fork_point(live_from: int | str, calls: Sequence[Exchange]) -> int:
    """The number of the recorded call a fork goes live at; a ConfigError naming what
    is wrong when there is no such call."""
    count = f"the cassette holds {len(calls)} model call{'s' if len(calls) != 1 else ''}"
    if isinstance(live_from, int):
        if live_from < 1:
            raise ConfigError(f"--live-from {live_from}: calls are counted from 1")
        if live_from > len(calls):
            raise ConfigError(f"--live-from {live_from} is beyond the recording: {count}")
        return live_from
    kind, _, wanted = live_from.partition(":")
    if kind == "tool":
        found = next((i for i, ex in enumerate(calls) if wanted in _tool_results(ex)), None)
        if found is None:
            seen = sorted({name for ex in calls for name in _tool_results(ex)})
            named = ", ".join(seen) if seen else "none"
            raise ConfigError(
                f"--live-from {live_from}: no recorded call follows a result of tool "
                f"{wanted!r} (tools with results: {named}; {count})"
            )
        return found + 1
    if kind == "text":
        found = next((i for i, ex in enumerate(calls) if _holds(ex, wanted)), None)
        if found is None:
            raise ConfigError(
                f"--live-from {live_from}: no recorded request holds that text ({count})"
            )
        return found + 1
    raise ConfigError(f"{_USAGE}, not {live_from!r}")


def _tool_results(exchange: Exchange) -> set[str]:
    """The tools whose results the request carries (a result names its call's id; the
    call, earlier in the conversation, names the tool)."""
    messages = exchange.request.messages
    names: dict[Any, str] = {}
    last = ""
    found: set[str] = set()
    for message in messages if isinstance(messages, list) else []:
        parts = message.get("parts") if isinstance(message, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "tool_call" and isinstance(part.get("name"), str):
                last = names[part.get("id")] = part["name"]
            elif part.get("type") == "tool_call_response":
                name = names.get(part.get("id"), last)
                if name:
                    found.add(name)
    return found


def _holds(exchange: Exchange, text: str) -> bool:
    """Whether a string of the request's system prompt or messages holds ``text``."""
    request = exchange.request
    return any(text in value for value in _strings([request.system, request.messages]))


def _strings(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
