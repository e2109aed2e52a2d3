"""Long strings stored once per trace file: the encoder's side (``readers.pieces`` reads
them back).

A coding agent resends its system prompt, its tools and every earlier message on every
turn, and a span writing each string where it occurs would hold all of it twice (the
GenAI attributes and the exact body). Here every string of ``MIN_PIECE`` characters or
more is a *piece*, named by a hash of its text, and stored once per trace file:

- in a GenAI attribute (``gen_ai.input.messages``, ``gen_ai.output.messages``,
  ``gen_ai.system_instructions``, ``gen_ai.tool.definitions``), where it first appears,
  in place, so a viewer reads each new message in full; where it comes again it reads
  ``otel-replay:piece:<id>`` (the JSON structure stays whole, as the conventions allow
  when content is left out);
- the exact body becomes a template (each piece replaced by its marker) plus where each
  piece goes; pieces the GenAI attributes do not hold are stored beside it
  (``otel_replay.pieces``).

A value under a key that names a secret (``"password": ...``) is never a piece: the
store's redaction of the line reads it together with its key, so it stays in place.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import re2

from otel_replay.core.exchange import JSON
from otel_replay.core.memo import IdentityMemo
from otel_replay.redaction.redact import PATTERNS_ONLY
from otel_replay.spans.attributes import PIECE_MARKER
from otel_replay.spans.lists import ListIndex

__all__ = [
    "MIN_PIECE",
    "Found",
    "Ledger",
    "holds_no_piece",
    "item_strings",
    "long_strings",
    "piece_id",
    "substituted",
    "templated",
]

MIN_PIECE = 256
"""Strings this long or longer are stored once per trace file."""
_MAX_CHARS = 64 * 1024 * 1024  # remembered pieces; beyond, they are stored again
_PROBE = "A1b2C3d4" * 6  # a value any secret-field shape would take


def piece_id(text: str) -> str:
    """The name of a piece: the first 96 bits of the SHA-256 of its text, in hex."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def holds_no_piece(raw: bytes) -> bool:
    """Whether the JSON text ``raw`` holds no string long enough to be a piece: a span of
    such a call stores everything in place, without the ledger's walks (a string redaction
    lengthened past the limit is then stored in place too: only sharing is lost).

    A string of ``MIN_PIECE`` characters has a JSON form of at least as many units, each
    a byte that is neither a quote nor a backslash, or an escape (a backslash and the byte
    after it): no run of that many units means no piece. RE2 finds one in a single pass
    (a coding agent's 75 KB request: 6 µs, where splitting it at its quotes took 280)."""
    return len(raw) < MIN_PIECE or _long_run().search(raw) is None


@functools.cache
def _long_run() -> Any:
    """The automaton, compiled at first use (``warm``): its program has a state per unit
    counted, a few ms to compile that a gateway's start need not wait for."""
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1  # a unit is a byte, whatever the text
    options.dot_nl = True
    return re2.compile(rb'(?:[^"\\]|\\.){%d}' % MIN_PIECE, options=options)


def warm() -> None:
    """Build the states of ``holds_no_piece``'s automaton now, off the gateway's loop (RE2
    releases the interpreter lock while it searches): RE2 builds them as a text first needs
    them, one per unit counted, 1-2 ms on a run's first request, which an answer coming in
    meanwhile would wait for."""
    _long_run().search(b"x" * MIN_PIECE)


_SECRET_KEYS: dict[str, bool] = {}
_MAX_KEYS = 4096  # keys remembered; beyond, the memory starts afresh


def _names_secret(key: str) -> bool:
    """Whether the redactor reads a value under ``key`` as a secret because of the key."""
    named = _SECRET_KEYS.get(key)
    if named is None:
        field = f"{json.dumps(key, ensure_ascii=False)}:{json.dumps(_PROBE)}"
        named = PATTERNS_ONLY.text(field) != field
        if len(_SECRET_KEYS) >= _MAX_KEYS:
            _SECRET_KEYS.clear()
        _SECRET_KEYS[key] = named
    return named


Path = tuple[str | int, ...]
Found = list[tuple[Path, str]]
"""The long strings of a value, each with where it is, in the order a walk meets them."""
_CONTAINERS = (dict, list)
_WALKED = (str, dict, list)  # what may hold a piece (exact types: values parsed from JSON)


def long_strings(value: JSON) -> Found:
    """Every string of ``value`` long enough to be a piece, but for those under a key
    that names a secret (exact types: values parsed from JSON).

    An object in a list (a message, a tool, a content block) is walked once per object:
    a conversation resends its earlier messages as the very same objects every turn
    (``core.memo``), so a request costs a walk of what is new in it and a lookup for the
    rest."""
    found: Found = []
    _find(value, (), found)
    return found


def _find(value: JSON, path: Path, found: Found) -> None:
    if type(value) is str:
        if len(value) >= MIN_PIECE:
            found.append((path, value))
    elif type(value) is dict:
        for key, item in value.items():
            if type(item) is str:
                if len(item) >= MIN_PIECE and not _names_secret(key):
                    found.append(((*path, key), item))
            elif type(item) in _CONTAINERS:
                _find(item, (*path, key), found)
    elif type(value) is list:
        for index, item in enumerate(value):
            if type(item) is dict:
                found.extend(((*path, index, *inner), text) for inner, text in item_strings(item))
            elif type(item) in _WALKED:
                _find(item, (*path, index), found)


def _strings_of(item: dict[str, JSON]) -> Found:
    found: Found = []
    _find(item, (), found)
    return found


item_strings = IdentityMemo(_strings_of, 1 << 14)
"""The long strings of an object met in a list, where in it each is: per object."""


def substituted(value: JSON, changes: list[tuple[Path, str]]) -> JSON:
    """``value`` with the string at each path replaced; containers are copied only on the
    way to a change (``value`` itself when there is none)."""
    holder: list[Any] = [value]
    copied: set[int] = set()  # containers made here, free to change in place
    for path, text in changes:
        parent: Any = holder
        at: str | int = 0
        for step in path:
            node = parent[at]
            if id(node) not in copied:
                node = dict(node) if type(node) is dict else list(node)
                copied.add(id(node))
                parent[at] = node
            parent, at = node, step
        parent[at] = text
    return holder[0]


class Ledger:
    """The pieces one trace file holds (written by one store), and those the span being
    encoded adds. ``begin`` before a span, ``commit`` once its line is on disk, ``drop``
    when it is not. Used from one thread at a time (the gateway's loop).

    A span's long strings are found first (``long_strings``), then placed: each is
    decided (stored before, or new to this span) against what the file holds at that
    moment. Finding is the walk of the whole value; placing costs a lookup per string.
    So a request's strings can be found, and its span's text drafted, while the provider
    works (``fork``), and only placed once its answer is in."""

    __slots__ = ("_chars", "_pending", "_written", "inline", "lists", "loose", "reused")

    def __init__(self) -> None:
        self.lists = ListIndex()
        """The lists the file holds (``spans.lists``), committed with the pieces."""
        self._written: dict[str, str] = {}
        self._chars = 0
        self._pending: dict[str, str] = {}
        self.inline: list[list[Any]] = []
        """``[attribute, path, id]`` of each piece stored in place in this span."""
        self.loose: dict[str, str] = {}
        """Pieces of this span's body that no GenAI attribute of it holds."""
        self.reused: list[str] = []
        """Pieces of this span's body stored by earlier spans (its line does not hold them)."""

    def fork(self) -> Ledger:
        """A ledger that reads what this one's file holds and keeps its own span: for
        drafting a span ahead (it is never committed)."""
        fork = Ledger()
        fork._written = self._written
        fork.lists = self.lists.fork()
        return fork

    def begin(self) -> None:
        self.drop()

    def settle(self, kept: bool, lists: bool = True) -> None:
        """Once one span line was made and appended: its pieces count as stored only when
        the line is on disk as encoded (``kept``), else they are dropped (a line the
        store's redaction changed may hold a piece changed with it, so later spans store
        their pieces again rather than refer to it). ``lists``: whether later spans may
        refer to its lists (``spans.lists``) too."""
        if kept:
            if not lists:
                self.lists.drop()
            self.commit()
        else:
            self.drop()

    @contextlib.contextmanager
    def storing(self, lists: bool = True) -> Iterator[list[bool]]:
        """``settle`` around a block making and appending one span line, which appends
        whether the line is on disk as encoded."""
        kept: list[bool] = []
        try:
            yield kept
        finally:
            self.settle(bool(kept and kept[0]), lists)

    def drop(self) -> None:
        self.lists.drop()
        self._pending.clear()
        self.inline = []
        self.loose = {}
        self.reused = []

    def commit(self) -> None:
        size = sum(map(len, self._pending))
        if self._chars + size > _MAX_CHARS:
            self._written.clear()
            self._chars = 0
        self._written.update(self._pending)
        self._chars += size
        self.lists.commit()
        self.drop()

    def view(self, attribute: str, value: JSON) -> JSON:
        """A GenAI attribute's value: pieces stored before read as markers; new ones stay
        in place and are noted in ``inline``."""
        found = long_strings(value)
        return self.marked(value, found, self.place_inline(attribute, found))

    @staticmethod
    def marked(value: JSON, found: Found, known: list[str | None]) -> JSON:
        """``value`` with each string ``place_inline`` found stored as its marker."""
        changes = [(path, PIECE_MARKER + k) for (path, _), k in zip(found, known, strict=True) if k]
        return substituted(value, changes)

    def place_inline(self, attribute: str, found: Found, ids: Ids = None) -> list[str | None]:
        """Place the strings of a GenAI attribute: for each, the piece it refers to when
        stored before, or None when it is new (then stored in place, noted in ``inline``).
        ``ids``: pieces already named."""
        known: list[str | None] = []
        for path, text in found:
            piece = self._known(text)
            if piece is None:
                new = self._pending[text] = _named(text, ids)
                self.inline.append([attribute, list(path), new])
            known.append(piece)
        return known

    def template(self, body: JSON) -> tuple[JSON, list[list[Any]]]:
        """The body with every piece replaced by its marker, and ``[path, id]`` of each;
        pieces new to the file and not in this span's GenAI attributes go to ``loose``."""
        found = long_strings(body)
        refs = self.place_refs(found)
        return templated(body, refs), refs

    def place_refs(self, found: Found, ids: Ids = None) -> list[list[Any]]:
        """Place the strings of the exact body: ``[path, id]`` of each (the same whatever
        the file holds: a piece is named by its text); new ones go to ``loose``."""
        refs: list[list[Any]] = []
        for path, text in found:
            piece = self._known(text)
            if piece is None:
                piece = self._pending[text] = _named(text, ids)
                self.loose[piece] = text
            elif text not in self._pending:
                self.reused.append(text)
            refs.append([list(path), piece])
        return refs

    def _known(self, text: str) -> str | None:
        return self._written.get(text) or self._pending.get(text)

    def named(self, found: Found) -> dict[str, str]:
        """The id of each string found (those the file holds without hashing them again)."""
        return {text: self._known(text) or piece_id(text) for _, text in found}


Ids = dict[str, str] | None


def _named(text: str, ids: Ids) -> str:
    return (ids.get(text) if ids else None) or piece_id(text)


def templated(body: JSON, refs: list[list[Any]]) -> JSON:
    """The body with the piece at each of ``refs`` as its marker."""
    return substituted(body, [(tuple(path), PIECE_MARKER + piece) for path, piece in refs])
