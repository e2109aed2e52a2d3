"""One call of the agent's own tool, as every hook makes it: asked, replayed or run.

``call_tool(name, arguments, run)`` (and ``acall_tool`` for a coroutine) asks the run's
gateway (``hooks.road``) and then:

- **replay**: returns the recorded result, or raises the recorded exception, and ``run``
  is never called;
- **record**: calls ``run``, tells the gateway how it ended (its result, or the exception
  it raised, which is raised again) and returns what it returned;
- **live** (``--tools live``, a ``[[live]]`` rule, a cassette that never recorded the
  agent's tools, or no run at all): calls ``run``;
- **miss**: raises :class:`ToolReplayMiss` into the agent (the run counts the miss).

An outcome is a ``tools/call`` result (a text block, ``isError``) plus, for a call
recorded here, the result itself as JSON (``value``) or the exception raised
(``raised``: its class and message). A result that does not serialise (an open file, a
client object) is recorded as such (``unserialisable``): the tool then runs live on
replay, since no recording can stand in for it. A call recorded from a production trace
carries only the text block: its text is the result.
"""

from __future__ import annotations

import contextvars
import dataclasses
import importlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from otel_replay.core.errors import OtelReplayError
from otel_replay.hooks.road import Road, road

__all__ = [
    "RecordedToolError",
    "ToolReplayMiss",
    "acall_tool",
    "as_json",
    "call_tool",
    "outcome_of",
    "outcome_of_error",
    "replayed",
]

log = logging.getLogger("otel_replay")

T = TypeVar("T")
_MAX_DEPTH = 64
_INSIDE: contextvars.ContextVar[bool] = contextvars.ContextVar("otel_replay_tool", default=False)
"""Inside a tool call already asked about: a hook met again (a decorated function a
framework's tool calls) runs its function."""


class ToolReplayMiss(OtelReplayError):
    """A tool call no recording answers, in a strict replay (the run fails too)."""


class RecordedToolError(OtelReplayError):
    """A recorded tool call that failed, replayed where its exception cannot be rebuilt:
    ``kind`` names the exception's class as recorded."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        super().__init__(message)


class _Unserialisable(TypeError):
    pass


def as_json(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON: text, numbers, lists, string-keyed maps, pydantic models and
    dataclasses by their fields; a tuple as a list. Raises TypeError for anything else."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if depth > _MAX_DEPTH:
        raise _Unserialisable("nested too deep")
    if isinstance(value, list | tuple):
        return [as_json(item, depth + 1) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise _Unserialisable("a map with keys that are not text")
        return {key: as_json(item, depth + 1) for key, item in value.items()}
    dump = getattr(value, "model_dump", None)  # pydantic
    if callable(dump):
        return as_json(dump(mode="json"), depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return as_json(dataclasses.asdict(value), depth + 1)
    raise _Unserialisable(type(value).__qualname__)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def outcome_of(value: Any) -> dict[str, Any]:
    """The outcome recorded for a call that returned ``value``."""
    try:
        found = as_json(value)
    except (TypeError, ValueError):
        kind = type(value).__qualname__
        text = {"type": "text", "text": f"<{kind} that does not serialise>"}
        return {"content": [text], "isError": False, "unserialisable": kind}
    return {"content": [{"type": "text", "text": _text(found)}], "isError": False, "value": found}


def outcome_of_error(exc: BaseException) -> dict[str, Any]:
    """The outcome recorded for a call that raised ``exc``."""
    kind = f"{type(exc).__module__}.{type(exc).__qualname__}"
    message = str(exc)
    raised: dict[str, Any] = {"type": kind, "message": message}
    try:
        raised["args"] = as_json(list(exc.args))
    except (TypeError, ValueError):
        pass
    return {"content": [{"type": "text", "text": message}], "isError": True, "raised": raised}


def _rebuilt(raised: dict[str, Any]) -> BaseException:
    """The exception a call raised, rebuilt from its class and arguments where the class
    can be imported and made so; else a :class:`RecordedToolError` naming it."""
    kind, message = str(raised.get("type", "")), str(raised.get("message", ""))
    module, _, name = kind.rpartition(".")
    try:
        found: Any = importlib.import_module(module)
        for part in name.split("."):
            found = getattr(found, part)
        if isinstance(found, type) and issubclass(found, Exception):
            args = raised.get("args")
            made = found(*args) if isinstance(args, list) else found(message)
            if str(made) == message:
                return made
    except Exception:  # any class, any constructor: fall back below
        pass
    return RecordedToolError(kind, message)


class _RunLive(Exception):
    """The recording cannot stand in for the call (its result did not serialise)."""


def replayed(outcome: dict[str, Any]) -> Any:
    """What a replayed call returns (a copy of the recorded value, or the text of a call
    read from a trace), or the exception it raises."""
    raised = outcome.get("raised")
    if isinstance(raised, dict):
        raise _rebuilt(raised)
    if "unserialisable" in outcome:
        raise _RunLive
    if "value" in outcome:
        return json.loads(json.dumps(outcome["value"]))  # the agent may change what it got
    blocks = outcome.get("content")
    text = "".join(
        str(block.get("text", ""))
        for block in (blocks if isinstance(blocks, list) else ())
        if isinstance(block, dict) and block.get("type") == "text"
    )
    if outcome.get("isError"):
        raise RecordedToolError("error", text)
    return text


def _doc(name: str, arguments: Any) -> dict[str, Any]:
    from otel_replay.hooks.context import traceparent

    try:
        args = as_json(arguments)
    except (TypeError, ValueError):
        args = {"unserialisable": type(arguments).__qualname__}
    doc: dict[str, Any] = {"name": name, "arguments": args, "start_ns": time.time_ns()}
    parent = traceparent()
    if parent:
        doc["traceparent"] = parent
    return doc


def _decision(name: str, arguments: Any) -> tuple[Road | None, dict[str, Any], dict[str, Any]]:
    way = road()
    if way is None or _INSIDE.get():
        return None, {}, {"do": "live"}
    doc = _doc(name, arguments)
    return way, doc, way.ask(doc)


def _told(way: Road, doc: dict[str, Any], outcome: dict[str, Any]) -> None:
    try:
        way.tell({**doc, "outcome": outcome, "end_ns": time.time_ns()})
    except OtelReplayError:
        log.exception("otel-replay could not record a call of %s", doc.get("name"))


_RUN = object()
"""``_settle``: the call is to run (the answer does not settle it)."""


def _settle(name: str, answer: dict[str, Any]) -> Any:
    """What the gateway's answer settles without running the tool: the replayed value
    (or the recorded exception, raised), a miss (raised); ``_RUN`` when the tool runs."""
    action = answer.get("do")
    if action == "replay":
        try:
            return replayed(answer.get("outcome") or {})
        except _RunLive:
            return _RUN
    if action == "miss":
        raise ToolReplayMiss(str(answer.get("message", f"replay miss: tool {name}")))
    return _RUN


def call_tool(name: str, arguments: Any, run: Callable[[], T]) -> T:
    """A call of tool ``name`` with ``arguments`` whose function is ``run`` (see the
    module's docstring)."""
    way, doc, answer = _decision(name, arguments)
    settled = _settle(name, answer)
    if settled is not _RUN:
        return settled  # type: ignore[no-any-return]
    if answer.get("do") != "record" or way is None:
        return _inside(run)
    try:
        value = _inside(run)
    except Exception as exc:
        _told(way, doc, outcome_of_error(exc))
        raise
    _told(way, doc, outcome_of(value))
    return value


def _inside(run: Callable[[], T]) -> T:
    token = _INSIDE.set(True)
    try:
        return run()
    finally:
        _INSIDE.reset(token)


async def acall_tool(name: str, arguments: Any, run: Callable[[], Awaitable[T]]) -> T:
    """``call_tool`` for a tool whose function is a coroutine."""
    way, doc, answer = _decision(name, arguments)
    settled = _settle(name, answer)
    if settled is not _RUN:
        return settled  # type: ignore[no-any-return]
    if answer.get("do") != "record" or way is None:
        return await _ainside(run)
    try:
        value = await _ainside(run)
    except Exception as exc:
        _told(way, doc, outcome_of_error(exc))
        raise
    _told(way, doc, outcome_of(value))
    return value


async def _ainside(run: Callable[[], Awaitable[T]]) -> T:
    token = _INSIDE.set(True)
    try:
        return await run()
    finally:
        _INSIDE.reset(token)
