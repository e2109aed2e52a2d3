"""The numbering of one request's placeholders, and substitution results kept with
their placeholders left open.

``Numbering`` gives each volatile value its placeholder, numbered per kind by first
occurrence across a request. A ``Template`` is what substituting one string produced, with
a stand-in where each placeholder goes and the calls made to the numbering in order:
filling it with a request's numbering makes the same calls, so a long string met again
(an agent's instructions, the history every later request repeats) is not scanned again.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from otel_replay.core.exchange import JSON

__all__ = ["Numbering", "Template", "ValueTemplate"]


class Numbering:
    """Placeholders of one request: per-kind counters and the values already seen."""

    __slots__ = ("counts", "seen")

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        self.counts: dict[str, int] = {}

    def placeholder(self, kind: str, value: str) -> str:
        found = self.seen.get(value)
        if found is None:
            n = self.counts.get(kind, 0) + 1
            self.counts[kind] = n
            found = self.seen[value] = f"<{kind}:{n}>"
        return found


class _Stand(Numbering):
    """Hands out a distinct stand-in per call, ``<kind:N>`` with a number no text holds
    (a random prefix per process), and remembers the calls in order. A stand-in has a
    placeholder's shape, so every later pass of a substitution treats it as one."""

    __slots__ = ("calls",)

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []

    def placeholder(self, kind: str, value: str) -> str:
        self.calls.append((kind, value))
        return f"<{kind}:{_STAND_IN}{len(self.calls)}>"


_STAND_IN = str(secrets.randbelow(9 * 10**17) + 10**17)
_STAND_INS = re.compile(r"<[A-Za-z][A-Za-z0-9_]*:" + _STAND_IN + r"([0-9]+)>")


@dataclass(frozen=True, slots=True)
class Template:
    """A substitution's result, its placeholders left open."""

    text: str
    calls: tuple[tuple[str, str], ...]
    whole: bool = False  # the text is its one placeholder

    @classmethod
    def of(cls, s: str, substitute: Callable[[Numbering], str]) -> Template | None:
        """The template of ``substitute`` applied to ``s``; None when it returns ``s``
        itself (nothing to replace)."""
        stand = _Stand()
        text = substitute(stand)
        if text is s:
            return None
        calls = tuple(stand.calls)
        return cls(text, calls, len(calls) == 1 and _STAND_INS.fullmatch(text) is not None)

    def fill(self, numbering: Numbering) -> str:
        """The result ``substitute`` gives with ``numbering`` (which it advances alike)."""
        if not self.calls:
            return self.text
        if self.whole:
            return numbering.placeholder(*self.calls[0])
        given = [numbering.placeholder(kind, value) for kind, value in self.calls]
        return _STAND_INS.sub(lambda m: given[int(m[1]) - 1], self.text)


class ValueTemplate:
    """A walk's result over one JSON value, its placeholders left open; filling it with
    the same placeholders as last time gives the very same object back (an earlier
    message of a conversation is numbered alike every turn, and stays one object)."""

    __slots__ = ("_last", "calls", "value")

    def __init__(self, walk: Callable[[Numbering], JSON]) -> None:
        stand = _Stand()
        self.value = walk(stand)
        self.calls = tuple(stand.calls)
        self._last: tuple[tuple[str, ...], JSON] | None = None

    @classmethod
    def known(cls, value: JSON) -> ValueTemplate:
        """The template of a walk that asked for no placeholder and gave ``value``."""
        template = cls.__new__(cls)
        template.value, template.calls, template._last = value, (), None
        return template

    def fill(self, numbering: Numbering) -> JSON:
        """The result the walk gives with ``numbering`` (which it advances alike)."""
        if not self.calls:
            return self.value
        given = tuple(numbering.placeholder(kind, value) for kind, value in self.calls)
        last = self._last
        if last is not None and last[0] == given:
            return last[1]
        filled = _filled(self.value, given)
        self._last = (given, filled)
        return filled


def _filled(value: JSON, given: tuple[str, ...]) -> JSON:
    kind = type(value)
    if kind is str:
        if _STAND_IN not in value:
            return value
        return _STAND_INS.sub(lambda m: given[int(m[1]) - 1], value)
    if kind is dict:
        return {_filled(k, given): _filled(v, given) for k, v in value.items()}
    if kind is list:
        return [_filled(v, given) for v in value]
    return value
