"""Texts kept on disk rather than in memory, read back by number.

A build writes what it collects from a trace file of any size — each interaction's text,
each shared value's, each agent span's — to an unnamed temporary file beside its output,
keeping two integers per text in memory (``Spill``). The file disappears when closed, and
with the process in any case.
"""

from __future__ import annotations

import tempfile
from array import array
from pathlib import Path
from typing import IO

__all__ = ["Spill", "SpillError"]


class SpillError(OSError):
    """The temporary file could not be made, written or read (``strerror`` says why)."""


class Spill:
    """Texts appended to an unnamed temporary file in ``folder`` (made on the first
    append), read back by their number. ``errors`` is how text becomes UTF-8 (``strict``:
    a lone surrogate raises ``UnicodeEncodeError``, a ``ValueError``). A failure of the
    file raises ``SpillError``."""

    def __init__(self, folder: Path, errors: str = "strict") -> None:
        self._folder = folder
        self._errors = errors
        self._file: IO[bytes] | None = None
        self._offsets = array("Q")
        self._lengths = array("Q")
        self._end = 0

    def __len__(self) -> int:
        return len(self._offsets)

    def append(self, text: str) -> int:
        """Keep ``text``; its number."""
        data = text.encode("utf-8", self._errors)
        try:
            spill = self._file or self._open()
            spill.write(data)
        except OSError as exc:
            raise SpillError(exc.errno, exc.strerror or str(exc)) from exc
        self._offsets.append(self._end)
        self._lengths.append(len(data))
        self._end += len(data)
        return len(self._offsets) - 1

    def __getitem__(self, number: int) -> str:
        spill = self._file
        if spill is None:
            raise IndexError(number)
        try:
            spill.seek(self._offsets[number])
            data = spill.read(self._lengths[number])
        except OSError as exc:
            raise SpillError(exc.errno, exc.strerror or str(exc)) from exc
        return data.decode("utf-8", self._errors)

    def flush(self) -> None:
        """Make every text appended so far readable (reading also flushes; this lets a
        caller meet a write error before it starts writing what reads them)."""
        if self._file is not None:
            try:
                self._file.flush()
            except OSError as exc:
                raise SpillError(exc.errno, exc.strerror or str(exc)) from exc

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _open(self) -> IO[bytes]:
        self._folder.mkdir(parents=True, exist_ok=True)
        self._file = tempfile.TemporaryFile(dir=self._folder, prefix=".otel-replay-")
        return self._file
