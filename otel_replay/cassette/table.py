"""The table of a version-2 cassette (see ``v2``): which values go to it, their names,
the texts the encoder collects, and the entries as a decoder reads them.

An encoder writing a whole cassette keeps its entries' texts in memory (the cassette is
there anyway); one writing a file piece by piece (``CassetteWriter``) keeps them in an
unnamed temporary file beside the target, with the SHA-256 digest, the name and two
integers per distinct value in memory, so a trace of any size builds in memory that
grows with its distinct values' count, not their size.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from otel_replay.cassette.fields import Problem
from otel_replay.cassette.v1 import compact, item_text
from otel_replay.core.exchange import JSON
from otel_replay.core.spill import Spill

__all__ = [
    "REFERENCE",
    "SharedTable",
    "is_reference",
    "resolved_inside",
    "resolved_table",
    "same_text",
]

REFERENCE = re.compile(r"@[0-9a-f]{12,64}")
"""The reference form: at a shared place, a string of this form names a table entry."""

_DIGITS = 12
_LONG = 1024


def is_reference(value: object) -> bool:
    """Whether ``value`` is a string of the reference form."""
    return type(value) is str and REFERENCE.fullmatch(value) is not None


def _shared(value: JSON) -> bool:
    """Whether a value at a shared place goes to the table."""
    kind = type(value)
    if kind is dict or kind is list:
        return True
    return kind is str and _shared_text(value)


def _shared_text(text: str) -> bool:
    """Whether a string goes to the table: a long one, or one of the reference form."""
    return len(text) >= _LONG or (text[:1] == "@" and REFERENCE.fullmatch(text) is not None)


def same_text(a: Any, b: Any) -> bool:
    """Whether two values already ``==`` have the same JSON text too: Python equates
    ``1``, ``1.0`` and ``True``, ``0.0`` and ``-0.0``, and dicts whose keys come in
    another order. Only containers, floats and values of different types are looked into
    (the loop runs per node)."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        if list(a) != list(b):
            return False
        pairs = zip(a.values(), b.values(), strict=True)
    elif kind is list:
        pairs = zip(a, b, strict=True)
    else:
        return kind is not float or repr(a) == repr(b)
    for x, y in pairs:
        if x is not y and (type(x) is not type(y) or type(x) in _LOOKED_INTO):
            if not same_text(x, y):
                return False
    return True


_LOOKED_INTO = frozenset({dict, list, float})


# --- encoding -------------------------------------------------------------------------


class _SpilledTexts:
    """Entry texts in an unnamed temporary file in ``folder``, found by name."""

    def __init__(self, folder: Path) -> None:
        self._spill = Spill(folder)
        self._at: dict[str, int] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._at

    def __setitem__(self, name: str, text: str) -> None:
        # an entry's text is UTF-8 (see ``item_text``)
        self._at[name] = self._spill.append(text)

    def sorted_items(self) -> Iterator[tuple[str, str]]:
        spill, at = self._spill, self._at
        for name in sorted(at):
            yield name, spill[at[name]]

    def close(self) -> None:
        self._spill.close()


class _MemoryTexts(dict[str, str]):
    """Entry texts in memory, found by name."""

    def sorted_items(self) -> Iterator[tuple[str, str]]:
        return ((name, self[name]) for name in sorted(self))

    def close(self) -> None:
        """Nothing to release."""


class SharedTable:
    """The shared values one file holds, named, as the texts of their entries.

    ``folder``: keep the texts in a temporary file there rather than in memory.
    ``by_identity`` also remembers values by object identity (holding them, so an id is
    never reused): a whole cassette encoded at once, whose loaded values are shared
    objects, then hashes each shared value once. ``keep_values`` keeps each entry's
    value too (for ``to_json``)."""

    def __init__(
        self,
        *,
        folder: Path | None = None,
        by_identity: bool = False,
        keep_values: bool = False,
    ) -> None:
        self.texts = _MemoryTexts() if folder is None else _SpilledTexts(folder)
        self.values: dict[str, JSON] = {}
        self._names: dict[bytes, str] = {}
        self._ids: dict[int, tuple[JSON, str]] | None = {} if by_identity else None
        self._keep = keep_values

    def place(self, value: JSON) -> JSON:
        """What stands at a shared place for ``value``: a reference, or ``value`` itself.
        Raises ValueError when it has no JSON form (NaN, infinity)."""
        if not _shared(value):
            return value
        ids = self._ids
        if ids is not None:
            known = ids.get(id(value))
            if known is not None:
                return known[1]
        digest = hashlib.sha256(compact(value).encode("utf-8", "surrogatepass")).digest()
        name = self._names.get(digest)
        if name is None:
            name = self._add(digest, value)
        if ids is not None:
            ids[id(value)] = (value, name)
        return name

    def _add(self, digest: bytes, value: JSON) -> str:
        hexed = digest.hex()
        size = _DIGITS
        while f"@{hexed[:size]}" in self.texts and size < len(hexed):
            size += 4
        name = f"@{hexed[:size]}"
        self._names[digest] = name
        written = self.inside(value) if type(value) is not str else value
        self.texts[name] = item_text(written)
        if self._keep:
            self.values[name] = written
        return name

    def inside(self, value: JSON) -> JSON:
        """``value`` with each string in it that goes to the table (see ``_shared_text``)
        a reference to a string entry: a shared object or array as its entry holds it, a
        WebSocket frame as the interaction holds it (see ``v2``)."""
        kind = type(value)
        if kind is dict:
            return {k: self.inside(v) for k, v in value.items()}
        if kind is list:
            return [self.inside(v) for v in value]
        if kind is str and _shared_text(value):
            return self.place(value)
        return value


# --- decoding -------------------------------------------------------------------------


class _Inside(Exception):
    """A bad reference inside a table entry; ``steps`` lead to it from the entry."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.steps: list[str] = []


def _inside(value: Any, strings: dict[str, JSON]) -> Any:
    """A table entry with each reference in it replaced by its string entry; the same
    object where it holds none."""
    kind = type(value)
    if kind is dict:
        out = {key: _step(item, strings, key) for key, item in value.items()}
        return value if all(out[k] is v for k, v in value.items()) else out
    if kind is list:
        items = [_step(item, strings, i) for i, item in enumerate(value)]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if kind is str and value[:1] == "@" and REFERENCE.fullmatch(value):
        found = strings.get(value)
        if type(found) is not str:
            raise _Inside(f"unknown reference {value!r} (no string entry of that name)")
        return found
    return value


def _step(item: Any, strings: dict[str, JSON], key: str | int) -> Any:
    try:
        return _inside(item, strings)
    except _Inside as bad:
        bad.steps.append(f"[{key}]" if type(key) is int else f".{key}")
        raise


def resolved_inside(value: JSON, table: dict[str, JSON], where: str) -> JSON:
    """``value`` (written by ``SharedTable.inside``) with each reference in it replaced by
    its string entry of ``table``; a Problem naming the place of an unknown one."""
    try:
        return _inside(value, table)
    except _Inside as bad:
        raise Problem(where + "".join(reversed(bad.steps)), bad.problem) from None


def resolved_table(doc: dict[str, Any]) -> dict[str, JSON]:
    """The document's table, each entry with the string entries it refers to in place;
    a Problem naming the place of anything wrong."""
    if "table" not in doc:
        raise Problem("table", "missing")
    table = doc["table"]
    if not isinstance(table, dict):
        raise Problem("table", "expected an object")
    for name in table:
        if not is_reference(name):
            raise Problem(f"table.{name}", "not a reference name (@ and 12 to 64 hex digits)")
    strings = {name: value for name, value in table.items() if type(value) is str}
    out: dict[str, JSON] = {}
    for name, value in table.items():
        try:
            out[name] = _inside(value, strings) if type(value) is not str else value
        except _Inside as bad:
            raise Problem(f"table.{name}" + "".join(reversed(bad.steps)), bad.problem) from None
    return out
