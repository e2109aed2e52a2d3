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
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, TextIO

from otel_replay.cassette.format import Cassette
from otel_replay.cassette.provenance import default_source
from otel_replay.cassette.versions import (
    FORMAT_VERSION,
    MIGRATIONS,
    codec_for,
    convert_0_to_1,
    decode,
)
from otel_replay.cassette.wire import MAX_DEPTH, too_deep
from otel_replay.core import jsontext
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
    """Pretty-printed (indent 2), stably ordered JSON text with a trailing newline, in
    ``FORMAT_VERSION``: the text of ``json.dumps(to_json(cassette), indent=2,
    ensure_ascii=False)`` except that each SSE event of a response is on one line of its
    own, as ``json.dumps(event, ensure_ascii=False)`` writes it (``jsontext.pretty``).

    Raises ValueError when a value has no JSON form (NaN, infinity).
    """
    return codec_for(FORMAT_VERSION).encode(cassette)


def from_json(doc: JSON, path: str = "<string>") -> Cassette:
    """A Cassette from a parsed document of any supported version."""
    return decode(doc, path)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _strict(text: str) -> JSON:
    """The standard library's reading, which names the line of an error (orjson reads
    the cassettes it takes, the same values, faster: ``jsontext.loads``)."""
    doc: JSON = json.loads(text, parse_constant=_reject_constant)
    return doc


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
        doc = jsontext.loads(text, _strict)
    except json.JSONDecodeError as exc:
        raise CassetteError(
            path, f"line {exc.lineno}", f"invalid JSON: {exc.msg} (column {exc.colno})"
        ) from None
    except ValueError as exc:
        raise CassetteError(path, "", f"invalid JSON: {exc}") from None
    except RecursionError:
        raise CassetteError(path, "", _TOO_DEEP) from None
    deep = too_deep(doc)
    if deep is not None:
        raise CassetteError(path, deep, _TOO_DEEP)
    try:
        return from_json(doc, path)
    except RecursionError:  # not reached within MAX_DEPTH; kept so no traceback escapes
        raise CassetteError(path, "", _TOO_DEEP) from None


_TOO_DEEP = f"JSON nested more than {MAX_DEPTH} levels deep; is this a recorded cassette?"


# --- I/O ------------------------------------------------------------------------------


def load(path: str | os.PathLike[str]) -> Cassette:
    """Read a cassette file. A missing or unreadable file is a CassetteError too, and so
    is anything but a regular file (a FIFO or a device would block or never end) or a
    file over ``MAX_CASSETTE_BYTES``."""
    return loads(_read_text(path), str(path))


MAX_CASSETTE_BYTES = 4 << 30
"""The largest cassette file ``load`` reads (4 GiB; it is held in memory while decoded)."""


def _read_text(path: str | os.PathLike[str]) -> str:
    """The file's text, opened without blocking and read no further than the limit."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise CassetteError(path, "", f"cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CassetteError(path, "", f"not a regular file ({_kind(info.st_mode)})")
        if info.st_size > MAX_CASSETTE_BYTES:
            raise CassetteError(path, "", _too_large(info.st_size))
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = _read_bounded(handle, info.st_size)
    except OSError as exc:
        raise CassetteError(path, "", f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_CASSETTE_BYTES:
        raise CassetteError(path, "", _too_large(len(data)))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CassetteError(path, "", "not UTF-8 text") from None


def _read_bounded(handle: BinaryIO, size: int) -> bytes:
    """The file's bytes, at most one past the limit: its size in one read, then in chunks
    when it has grown since (or, like a ``/proc`` file, reports no size)."""
    parts = [handle.read(min(size, MAX_CASSETTE_BYTES) + 1)]
    total = len(parts[0])
    while total > size and total <= MAX_CASSETTE_BYTES:
        part = handle.read(min(_CHUNK, MAX_CASSETTE_BYTES + 1 - total))
        if not part:
            break
        parts.append(part)
        total += len(part)
    return b"".join(parts) if len(parts) > 1 else parts[0]


_CHUNK = 1 << 20


def _too_large(size: int) -> str:
    return (
        f"{size} bytes is over the {MAX_CASSETTE_BYTES}-byte limit for a cassette;"
        " split the recording into several cassettes"
    )


def _kind(mode: int) -> str:
    kinds = {
        stat.S_ISDIR: "a directory",
        stat.S_ISFIFO: "a FIFO",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISSOCK: "a socket",
    }
    return next((name for test, name in kinds.items() if test(mode)), "an unknown kind of file")


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
