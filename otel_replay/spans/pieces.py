"""Long strings stored once per trace file: the encoder's side (``readers.pieces`` reads
them back).

A coding agent resends its system prompt, its tools and every earlier message on every
turn, and each span used to hold all of it twice (the GenAI attributes and the exact
body). Here every string of ``MIN_PIECE`` characters or more is a *piece*, named by a
hash of its text, and stored once per trace file:

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
import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from otel_replay.core.exchange import JSON
from otel_replay.redaction.redact import PATTERNS_ONLY
from otel_replay.spans.attributes import PIECE_MARKER

__all__ = ["MIN_PIECE", "Ledger", "holds_no_piece", "piece_id"]

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

    Escaped backslashes and quotes are blanked out first, so that the text between two
    quotes left is either a whole string's JSON form or the text between two strings; a
    string is never longer than its JSON form, so no such run that long means no piece."""
    if len(raw) < MIN_PIECE:
        return True
    flat = raw.replace(b"\\\\", b"__").replace(b'\\"', b"__")
    return max(map(len, flat.split(b'"'))) < MIN_PIECE


def _names_secret(key: str) -> bool:
    """Whether the redactor reads a value under ``key`` as a secret because of the key."""
    field = f"{json.dumps(key, ensure_ascii=False)}:{json.dumps(_PROBE)}"
    return PATTERNS_ONLY.text(field) != field


Path = list[str | int]
_CONTAINERS = (dict, list)
_WALKED = (str, dict, list)  # what may hold a piece (exact types: values parsed from JSON)


class Ledger:
    """The pieces one trace file holds (written by one store), and those the span being
    encoded adds. ``begin`` before a span, ``commit`` once its line is on disk, ``drop``
    when it is not. Used from one thread at a time (the gateway's loop)."""

    __slots__ = ("_chars", "_keys", "_pending", "_written", "inline", "loose", "reused")

    def __init__(self) -> None:
        self._written: dict[str, str] = {}
        self._chars = 0
        self._pending: dict[str, str] = {}
        self._keys: dict[str, bool] = {}
        self.inline: list[list[Any]] = []
        """``[attribute, path, id]`` of each piece stored in place in this span."""
        self.loose: dict[str, str] = {}
        """Pieces of this span's body that no GenAI attribute of it holds."""
        self.reused: list[str] = []
        """Pieces of this span's body stored by earlier spans (its line does not hold them)."""

    def begin(self) -> None:
        self.drop()

    @contextlib.contextmanager
    def storing(self) -> Iterator[list[bool]]:
        """Around making and appending one span line: the block appends whether the line
        is on disk as encoded; only then do its pieces count as stored (a line the store's
        redaction changed may hold a piece changed with it, so later spans store their
        pieces again rather than refer to it)."""
        kept: list[bool] = []
        try:
            yield kept
        finally:
            if kept and kept[0]:
                self.commit()
            else:
                self.drop()

    def drop(self) -> None:
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
        self.drop()

    def view(self, attribute: str, value: JSON) -> JSON:
        """A GenAI attribute's value: pieces stored before read as markers; new ones stay
        in place and are noted in ``inline``."""

        def place(text: str, path: Path) -> str:
            known = self._known(text)
            if known is not None:
                return PIECE_MARKER + known
            new = self._pending[text] = piece_id(text)
            self.inline.append([attribute, list(path), new])
            return text

        return self._walk(value, [], place)

    def template(self, body: JSON) -> tuple[JSON, list[list[Any]]]:
        """The body with every piece replaced by its marker, and ``[path, id]`` of each;
        pieces new to the file and not in this span's GenAI attributes go to ``loose``."""
        refs: list[list[Any]] = []

        def place(text: str, path: Path) -> str:
            known = self._known(text)
            if known is None:
                known = self._pending[text] = piece_id(text)
                self.loose[known] = text
            elif text not in self._pending:
                self.reused.append(text)
            refs.append([list(path), known])
            return PIECE_MARKER + known

        return self._walk(body, [], place), refs

    def _known(self, text: str) -> str | None:
        return self._written.get(text) or self._pending.get(text)

    def _secret_key(self, key: str) -> bool:
        named = self._keys.get(key)
        if named is None:
            named = self._keys[key] = _names_secret(key)
        return named

    def _walk(self, value: JSON, path: Path, place: Callable[[str, Path], str]) -> JSON:
        """``value`` with ``place`` applied to each long string; a container none of whose
        strings changed is ``value`` itself (copied only where something changes)."""
        if type(value) is str:
            return place(value, path) if len(value) >= MIN_PIECE else value
        if type(value) is dict:
            out: dict[str, JSON] | None = None
            for key, item in value.items():
                if type(item) is str:
                    if len(item) < MIN_PIECE or self._secret_key(key):
                        continue
                    new = place(item, [*path, key])
                elif type(item) in _CONTAINERS:
                    path.append(key)
                    new = self._walk(item, path, place)
                    path.pop()
                else:
                    continue
                if new is not item:
                    if out is None:
                        out = dict(value)
                    out[key] = new
            return value if out is None else out
        if type(value) is list:
            items: list[JSON] | None = None
            for index, item in enumerate(value):
                if type(item) not in _WALKED:
                    continue
                path.append(index)
                new = self._walk(item, path, place)
                path.pop()
                if new is not item:
                    if items is None:
                        items = list(value)
                    items[index] = new
            return value if items is None else items
        return value
