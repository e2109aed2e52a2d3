"""``@otel_replay.tool``: any sync or async function made a tool whose calls are recorded
and replayed like model calls. Outside a run it is the plain function."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, overload

from otel_replay.hooks.calls import acall_tool, call_tool

__all__ = ["tool"]

F = TypeVar("F", bound=Callable[..., Any])


def _arguments(signature: inspect.Signature | None, args: Any, kwargs: Any) -> dict[str, Any]:
    """The call's arguments by parameter name (what is matched), defaults left out."""
    if signature is not None:
        try:
            return dict(signature.bind(*args, **kwargs).arguments)
        except TypeError:  # the function itself will say what is wrong
            pass
    return {"args": list(args), **kwargs} if args else dict(kwargs)


def _wrap(function: F, name: str) -> F:
    try:
        signature: inspect.Signature | None = inspect.signature(function)
    except (TypeError, ValueError):
        signature = None
    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def acalled(*args: Any, **kwargs: Any) -> Any:
            arguments = _arguments(signature, args, kwargs)
            return await acall_tool(name, arguments, lambda: function(*args, **kwargs))

        return acalled  # type: ignore[return-value]

    @functools.wraps(function)
    def called(*args: Any, **kwargs: Any) -> Any:
        arguments = _arguments(signature, args, kwargs)
        return call_tool(name, arguments, lambda: function(*args, **kwargs))

    return called  # type: ignore[return-value]


@overload
def tool(function: F, /) -> F: ...


@overload
def tool(*, name: str | None = None) -> Callable[[F], F]: ...


def tool(function: F | None = None, /, *, name: str | None = None) -> F | Callable[[F], F]:
    """Mark ``function`` as a tool (``@otel_replay.tool`` or
    ``@otel_replay.tool(name="…")``; the name defaults to the function's)."""
    if function is not None:
        return _wrap(function, name or function.__name__)

    def mark(given: F) -> F:
        return _wrap(given, name or given.__name__)

    return mark
