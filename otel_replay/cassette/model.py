"""The cassette: recorded exchanges in one pretty-printed, stably ordered JSON file.

Pure core, thin I/O: ``dumps`` / ``loads`` convert between a ``Cassette`` and text;
``dump`` / ``load`` only move that text to and from disk (crash-safely on the way out).
Every file carries ``version``; each version's layout is its codec's (see ``versions``):
older versions migrate through ``MIGRATIONS`` and a newer one is refused with "upgrade
otel-replay". Problems name the file and the place: ``line 12`` for broken JSON,
``interactions[3].response.status`` for a wrong field.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from otel_replay.cassette.format import Cassette
from otel_replay.cassette.provenance import default_source
from otel_replay.cassette.versions import (
    FORMAT_VERSION,
    MIGRATIONS,
    codec_for,
    convert_0_to_1,
    decode,
)
from otel_replay.core.errors import CassetteError
from otel_replay.core.exchange import JSON
from otel_replay.core.gcpause import paused_gc

__all__ = [
    "FORMAT_VERSION",
    "MIGRATIONS",
    "Cassette",
    "atomic_text",
    "convert_0_to_1",
    "default_source",
    "dump",
    "dumps",
    "from_json",
    "load",
    "loads",
    "locked",
    "to_json",
    "write_atomic",
]


def to_json(cassette: Cassette) -> dict[str, JSON]:
    """The cassette as the JSON document ``dumps`` writes (fixed key order)."""
    return codec_for(FORMAT_VERSION).to_json(cassette)


def dumps(cassette: Cassette) -> str:
    """Pretty-printed (indent 2), stably ordered JSON text with a trailing newline: the
    text of ``json.dumps(to_json(cassette), indent=2, ensure_ascii=False)``, written
    faster (see ``jsontext``), in ``FORMAT_VERSION``.

    Raises ValueError when a value has no JSON form (NaN, infinity).
    """
    return codec_for(FORMAT_VERSION).encode(cassette)


def from_json(doc: JSON, path: str = "<string>") -> Cassette:
    """A Cassette from a parsed document of any supported version."""
    return decode(doc, path)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


_GC_PAUSE_CHARS = 1 << 20


def loads(text: str, path: str = "<string>") -> Cassette:
    """Parse cassette text; errors name ``path`` and the line or field.

    The cyclic GC is paused while a large cassette (over 1 M characters) is decoded: the
    decoded objects hold no cycles, and the full collections their number triggers made
    loading slower per interaction as the cassette grew."""
    with paused_gc(len(text) > _GC_PAUSE_CHARS):
        return _loads(text, path)


def _loads(text: str, path: str) -> Cassette:
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise CassetteError(
            path, f"line {exc.lineno}", f"invalid JSON: {exc.msg} (column {exc.colno})"
        ) from None
    except ValueError as exc:
        raise CassetteError(path, "", f"invalid JSON: {exc}") from None
    return from_json(doc, path)


# --- I/O ------------------------------------------------------------------------------


def load(path: str | os.PathLike[str]) -> Cassette:
    """Read a cassette file. A missing or unreadable file is a CassetteError too."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CassetteError(path, "", "not UTF-8 text") from None
    except OSError as exc:
        raise CassetteError(path, "", f"cannot read: {exc.strerror or exc}") from None
    return loads(text, str(path))


def dump(cassette: Cassette, path: str | os.PathLike[str]) -> None:
    """Write a cassette crash-safely (see :func:`write_atomic`); on any failure the old
    file is untouched."""
    try:
        text = dumps(cassette)
    except ValueError as exc:
        raise CassetteError(path, "", f"cannot write: {exc}") from None
    try:
        write_atomic(Path(path), text)
    except OSError as exc:
        raise CassetteError(path, "", f"cannot write: {exc.strerror or exc}") from None


def write_atomic(target: Path, text: str) -> None:
    """A temporary file in the same directory, fsync, then an atomic rename over
    ``target`` (keeping its permissions). Raises ``OSError``; the old file stays intact."""
    with atomic_text(target) as handle:
        handle.write(text)


@contextmanager
def atomic_text(target: Path) -> Iterator[TextIO]:
    """A text handle whose content replaces ``target`` atomically when the block ends
    without an exception (see :func:`write_atomic`); on an exception nothing changes.
    A symlinked ``target`` is written through: its final target is replaced and the
    link stays."""
    target = written_path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def written_path(target: Path) -> Path:
    """The file a write to ``target`` changes: a symlink's final target (dangling or
    not), else ``target`` itself."""
    return Path(os.path.realpath(target)) if target.is_symlink() else target


@contextmanager
def locked(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the cassette ``target`` for one writer at a time, across processes; yields the
    file a write changes (see :func:`written_path`).

    The lock is an exclusive ``flock`` on the directory holding that file, so nothing is
    left beside the cassette; a run that appends re-reads the cassette under it (two
    pytest-xdist workers sharing a cassette then both keep what they recorded)."""
    path = written_path(Path(target))
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError as exc:
        raise CassetteError(path, "", f"cannot lock: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        os.close(fd)
        raise CassetteError(path, "", f"cannot lock: {exc.strerror or exc}") from None
    try:
        yield path
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable where the platform allows it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
