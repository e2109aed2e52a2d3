"""Pausing the cyclic garbage collector around bulk work that allocates no cycles.

Decoding or indexing many JSON values triggers full collections whose cost grows with
everything already loaded, so bulk steps over a large cassette or run got slower per item
the bigger it was. The values they make hold no reference cycles, so nothing is lost by
collecting after the step instead of during it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["paused_gc"]


@contextlib.contextmanager
def paused_gc(active: bool = True, *, freeze: bool = False) -> Iterator[None]:
    """Pause the cyclic GC for the block when ``active`` and it is enabled; restore it
    after, also on an exception. Nested pauses leave it to the outermost. ``freeze``: what
    the process holds at the end of the block lives as long as it (a command's start: its
    modules, its cassette), so it is moved out of the collector's sight (``gc.freeze``)
    rather than walked by its next collections, the first of which would walk it all."""
    paused = active and gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            if freeze:
                gc.freeze()
            gc.enable()
