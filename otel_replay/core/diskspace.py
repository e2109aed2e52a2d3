"""Disk space set aside ahead of writes, so that a write into it cannot fail for lack of
room.

A recording gateway answers a call before its line is written only when the line has
room set aside already (``otlp.store``): blocks allocated past the end of the trace file
with ``fallocate(FALLOC_FL_KEEP_SIZE)``, which leaves the file's size (and so its lines)
as they are, and within the process's file-size limit. Where the system cannot set room
aside (no ``fallocate``, a file system without it), nothing is promised and the caller
writes before it answers.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import sys
from collections.abc import Callable

__all__ = ["set_aside", "size_limit"]

log = logging.getLogger("otel_replay")

_KEEP_SIZE = 0x01  # FALLOC_FL_KEEP_SIZE: allocate past the end, the size unchanged

_Fallocate = Callable[[int, int, int, int], int]


def _load() -> _Fallocate | None:
    """The C library's ``fallocate``, looked up in the symbols the interpreter has loaded
    (it links the C library): ``ctypes.util.find_library`` would run ``ldconfig``."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.fallocate64 if hasattr(libc, "fallocate64") else libc.fallocate
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    call.restype = ctypes.c_int
    return call


_fallocate: _Fallocate | None = None
_looked_up = False
"""Whether ``_fallocate`` was looked up: when first needed (``ctypes`` costs milliseconds
at a command's start, which a replay that writes no trace file never needs)."""


def set_aside(fd: int, offset: int, length: int) -> bool:
    """Allocate ``length`` bytes of ``fd``'s file from ``offset`` on without changing its
    size; False when the room cannot be had (the disk is full, a quota, a file system
    without the call; a kernel without it: then never tried again in this process)."""
    global _fallocate, _looked_up
    if not _looked_up:
        _fallocate, _looked_up = _load(), True
    if _fallocate is None or length <= 0:
        return False
    if _fallocate(fd, _KEEP_SIZE, offset, length) == 0:
        return True
    import ctypes

    code = ctypes.get_errno()
    if code == errno.ENOSYS:
        log.debug("fallocate is not supported here (%s)", os.strerror(code))
        _fallocate = None
    return False


def size_limit() -> int | None:
    """The process's file-size limit (``RLIMIT_FSIZE``, soft) in bytes, or None."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else soft
