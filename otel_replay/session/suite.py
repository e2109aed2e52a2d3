"""What a session asks of the larger run it is one part of (a test suite, across processes).

The pytest plugin runs one :class:`~otel_replay.session.session.Session` per block; a
cassette or misses file several blocks write belongs to the whole run (see
``frontends.suite``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from otel_replay.cassette.model import Cassette, dump, load, locked
from otel_replay.cassette.provenance import extended_source
from otel_replay.core.exchange import Exchange

__all__ = ["SuiteWrites", "append_or_start"]


class SuiteWrites(Protocol):
    """Each is called with the file's lock held, just before the session writes it, and
    says whether an earlier part of the run wrote that file: then the session adds to it
    (a record-mode cassette is appended to, misses are kept) instead of starting afresh."""

    def cassette(self, path: Path) -> bool: ...

    def misses(self, path: Path) -> bool: ...


def append_or_start(
    path: Path,
    suite: SuiteWrites | None,
    start: Callable[[Path], None] | None,
    recorded: Callable[[], list[Exchange]],
    source: Callable[[], dict[str, Any]],
) -> None:
    """Write a run's recordings into the cassette ``path``, under its lock: ``start(path)``
    writes it afresh (record mode) unless an earlier part of the same ``suite`` wrote it;
    otherwise ``recorded()`` is appended to the cassette as it is now, not as it was
    loaded — another run (a pytest-xdist worker) may have appended its own since.
    ``source()`` is the provenance of a cassette that had none."""
    with locked(path) as target:
        again = suite is not None and suite.cassette(target)
        if start is not None and not again:
            start(path)
            return
        now = load(target) if target.exists() else Cassette(interactions=[], source={})
        provenance = extended_source(now.source, source)
        calls = now.interactions + recorded()
        dump(Cassette(interactions=calls, source=provenance, tools=now.tools), target)
