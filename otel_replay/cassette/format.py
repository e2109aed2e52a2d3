"""What a cassette is, and what each version of its file format provides.

A :class:`Cassette` is the loaded form every version decodes to. A format version is one
:class:`CassetteCodec`: it decodes a parsed document of its version, and encodes a cassette
either whole or piece by piece through a :class:`StreamEncoder` (how ``CassetteWriter``
writes a cassette too large to hold in memory). ``versions`` lists the codecs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from otel_replay.core.exchange import JSON, Exchange

__all__ = ["Cassette", "CassetteCodec", "LongArray", "StreamEncoder"]


@dataclass(slots=True)
class Cassette:
    """Recorded interactions, in recording order, and where they came from.

    ``source`` is free-form provenance: ``command``, ``recorded_at`` (ISO time),
    ``traces`` (trace files), ``otel_replay`` (the version that wrote it), ...
    ``tools`` holds the tool calls (MCP exchanges, provider ``mcp``): the file keeps them
    among its interactions, after the model calls; loaded, they are apart, so that
    everything about model calls reads ``interactions`` alone.
    """

    interactions: list[Exchange] = field(default_factory=list)
    source: dict[str, JSON] = field(default_factory=dict)
    tools: list[Exchange] = field(default_factory=list)

    def written(self) -> list[Exchange]:
        """Every interaction the file holds, in its order: the model calls, then the
        tool calls."""
        return [*self.interactions, *self.tools] if self.tools else self.interactions


@dataclass(frozen=True, slots=True)
class LongArray:
    """An array of a cassette's ``source`` too long to hold in memory, as a
    :class:`StreamEncoder` takes it: ``items()`` gives its values afresh, in order, and
    they are written one at a time (the text is that of the list of them). ``surrogates``
    says whether a value holds a lone surrogate, which UTF-8 cannot carry (the whole head
    is then written with every non-ASCII character escaped, as for any such value)."""

    items: Callable[[], Iterator[JSON]]
    surrogates: bool = False


class StreamEncoder(Protocol):
    """One cassette file written piece by piece; a fresh encoder per file.

    ``interaction`` is called once per exchange, in arrival order, and may remember what
    the exchange shares with others; ``pieces`` then yields the whole file's text given the
    interactions' texts in file order (which may differ from arrival order)."""

    def interaction(self, exchange: Exchange) -> str:
        """One interaction's text as the file holds it. Raises ValueError when a value has
        no JSON form (NaN, infinity)."""
        ...

    def pieces(self, source: dict[str, JSON], texts: Iterable[str]) -> Iterator[str]:
        """The file's text, in pieces: whatever leads, each text of ``texts``, the close.
        A value of ``source`` may be a :class:`LongArray`."""
        ...

    def close(self) -> None:
        """Release what the encoder keeps on disk (called once the file is written, or
        abandoned)."""
        ...


class CassetteCodec(Protocol):
    """One version of the cassette file format."""

    @property
    def version(self) -> int:
        """The ``version`` its documents carry."""
        ...

    def decode(self, doc: dict[str, Any], path: str) -> Cassette:
        """A Cassette from a parsed document of this version; raises ``CassetteError``
        naming ``path`` and the place."""
        ...

    def to_json(self, cassette: Cassette) -> dict[str, JSON]:
        """The document :meth:`encode` writes, as JSON values (fixed key order)."""
        ...

    def encode(self, cassette: Cassette) -> str:
        """The file's text: ``json.dumps(to_json(cassette), indent=2, ensure_ascii=False)``
        with each SSE event of a response on one line of its own (``jsontext.LineItems``),
        and a newline. Raises ValueError when a value has no JSON form."""
        ...

    def encoder(self, folder: Path | None = None) -> StreamEncoder:
        """A fresh encoder writing one file of this version piece by piece; ``folder``,
        when given, is where it may keep what it remembers in a temporary file rather
        than in memory (the writer passes the target's folder)."""
        ...
