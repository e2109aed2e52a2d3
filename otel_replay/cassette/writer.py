"""Writing a cassette too large to hold in memory.

A production trace file can hold hundreds of thousands of model calls. ``CassetteWriter``
turns each interaction into its final text as it arrives and spills that text to an
unnamed temporary file beside the target, keeping only three integers per interaction
(start time, offset, length). ``commit`` then writes the cassette in start-time order,
atomically, with the very text ``dumps`` would write. Memory stays flat in the number of
interactions, apart from what the format's encoder keeps of what they share (version 2:
a digest, a name and two integers per distinct shared value, whose text waits in a
temporary file beside the target too); leaving without ``commit`` leaves the target
untouched and nothing behind. The text of each piece is the format codec's (see
``format.StreamEncoder``).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from otel_replay.cassette.format import CassetteCodec
from otel_replay.cassette.model import atomic_text
from otel_replay.cassette.versions import codec_for
from otel_replay.core.errors import CassetteError
from otel_replay.core.exchange import JSON, Exchange
from otel_replay.core.spill import Spill

__all__ = ["CassetteWriter"]


class CassetteWriter:
    """Collects interactions for one cassette file; use it as a context manager.

    Texts are redacted by the caller before ``add``: the spill file holds exactly what
    the cassette will. ``codec`` is the format written (default: ``FORMAT_VERSION``'s).
    """

    def __init__(self, target: str | os.PathLike[str], codec: CassetteCodec | None = None) -> None:
        self.target = Path(target)
        self._encoder = (codec or codec_for()).encoder(self.target.parent)
        self._spill = Spill(self.target.parent)
        self._starts: array[int] | list[int] = array("Q")

    def __enter__(self) -> CassetteWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self._starts)

    def add(self, exchange: Exchange) -> None:
        """Spill one interaction. Raises ``CassetteError`` when it has no JSON form or
        the spill cannot be written."""
        try:
            self._spill.append(self._encoder.interaction(exchange))
        except ValueError as exc:
            raise CassetteError(self.target, "", f"cannot write: {exc}") from None
        except OSError as exc:
            raise CassetteError(self.target, "", _cannot(exc)) from None
        try:
            self._starts.append(exchange.start_ns)
        except OverflowError:  # beyond OTLP's unsigned 64 bits: keep them as Python ints
            self._starts = [*self._starts, exchange.start_ns]

    def commit(self, source: dict[str, JSON]) -> None:
        """Write the cassette: every interaction, in start-time order (ties in arrival
        order), crash-safely over the target."""
        try:
            with atomic_text(self.target) as out:
                for piece in self._encoder.pieces(source, self._texts()):
                    out.write(piece)
        except ValueError as exc:
            raise CassetteError(self.target, "", f"cannot write: {exc}") from None
        except OSError as exc:
            raise CassetteError(self.target, "", _cannot(exc)) from None

    def close(self) -> None:
        """Drop the spill files (the target is only ever changed by ``commit``)."""
        self._encoder.close()
        self._spill.close()

    def _texts(self) -> Iterator[str]:
        spill = self._spill
        spill.flush()
        starts = self._starts
        count = len(starts)
        if all(starts[i] <= starts[i + 1] for i in range(count - 1)):
            order: range | list[int] = range(count)  # the usual case: already in order
        else:
            order = sorted(range(count), key=starts.__getitem__)
        for i in order:
            yield spill[i]


def _cannot(exc: OSError) -> str:
    return f"cannot write: {exc.strerror or exc}"
