"""Typed access to the fields of a parsed cassette document.

A decoder reads each JSON object through :class:`Fields`, which checks types and unknown
keys and raises :class:`Problem` naming the place (``interactions[3].response.status``);
the codec turns a Problem into a ``CassetteError`` that also names the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from otel_replay.core.errors import CassetteError

__all__ = ["Fields", "Problem", "check", "naming"]


class Problem(Exception):
    """A schema problem at a place in the document (becomes a CassetteError)."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(where, problem)
        self.where = where
        self.problem = problem


_TYPE_NAMES: dict[str, str] = {
    "str": "a string",
    "int": "an integer",
    "number": "a number",
    "bool": "a boolean",
    "dict": "an object",
    "list": "an array",
    "null": "null",
}


def _kind_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "number"
    return type(value).__name__


def check(value: object, where: str, *kinds: str) -> Any:
    """``value`` when it is one of ``kinds`` (``str``, ``int``, ``number`` — an integer
    too —, ``bool``, ``dict``, ``list``, ``null``); else a Problem at ``where``."""
    kind = _kind_of(value)
    if kind in kinds or (kind == "int" and "number" in kinds):
        return value
    wanted = " or ".join(_TYPE_NAMES[k] for k in kinds)
    got = _TYPE_NAMES.get(kind, kind)
    raise Problem(where, f"expected {wanted}, got {got}")


class Fields:
    """Typed field access on one JSON object, tracking its path and unknown keys."""

    def __init__(self, value: object, where: str, keys: frozenset[str]) -> None:
        self.data: dict[str, Any] = check(value, where, "dict")
        self.where = where
        for key in self.data:
            if key not in keys:
                raise Problem(f"{where}.{key}", "unknown field")

    def req(self, key: str, *kinds: str) -> Any:
        """A field that must be present, of one of ``kinds``."""
        if key not in self.data:
            raise Problem(f"{self.where}.{key}", "missing")
        return check(self.data[key], f"{self.where}.{key}", *kinds)

    def opt(self, key: str, default: Any, *kinds: str) -> Any:
        """A field that may be absent (then ``default``), else of one of ``kinds``."""
        if key not in self.data:
            return default
        return check(self.data[key], f"{self.where}.{key}", *kinds)


@contextmanager
def naming(path: str) -> Iterator[None]:
    """A Problem raised in the block becomes a CassetteError naming ``path`` too."""
    try:
        yield
    except Problem as problem:
        raise CassetteError(path, problem.where, problem.problem) from None
