"""What a test suite did to its cassettes, decided once for the whole run.

Pure functions over what every block of a pytest run (all pytest-xdist workers together)
reported: which recordings no block used (:func:`unused_recordings`), and how each
cassette the run wrote differs from what it held before (:func:`fingerprints`,
:func:`compare`), so the diff a reviewer sees is explained.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from otel_replay.cassette.format import Cassette
from otel_replay.cassette.v1 import interaction_dict
from otel_replay.core.exchange import COMPONENTS
from otel_replay.core.ids import SHORT_HASH_DIGITS
from otel_replay.matching.normalize import DEFAULT
from otel_replay.matching.projection import digest
from otel_replay.reports.run import Block

__all__ = [
    "CassetteChange",
    "UsedBlock",
    "compare",
    "fingerprints",
    "unused_message",
    "unused_recordings",
]

Fingerprint = tuple[str, str]
"""One interaction as the change report compares it: (request, response) hashes."""


class UsedBlock(Block, Protocol):
    """What the unused decision needs of one block: also how many recordings it loaded,
    and whether it ended cleanly."""

    @property
    def loaded(self) -> int: ...
    @property
    def clean(self) -> bool: ...


def unused_recordings(blocks: Iterable[UsedBlock]) -> dict[str, list[int]]:
    """Per cassette, the recordings that no block of the run used, ascending.

    A recording counts as used when any block replayed it. Only the recordings every block
    saw when it began are considered (auto mode appends, so those are the file's stable
    prefix; what a block appended it used). A cassette is left out when a block recorded
    it afresh, or ended with an exception or a miss: that block may not have made the
    calls it would have made, and its recordings would look unused."""
    by_cassette: dict[str, list[UsedBlock]] = {}
    for block in blocks:
        by_cassette.setdefault(block.cassette, []).append(block)
    found: dict[str, list[int]] = {}
    for cassette, group in by_cassette.items():
        if any(b.mode not in ("strict", "auto") or not b.clean for b in group):
            continue
        used = {i for b in group for i in b.summary.hits}
        unused = [i for i in range(min(b.loaded for b in group)) if i not in used]
        if unused:
            found[cassette] = unused
    return found


def unused_message(cassette: str, unused: Sequence[int]) -> str:
    shown = ", ".join(f"#{i}" for i in unused[:10]) + (" …" if len(unused) > 10 else "")
    n = len(unused)
    return (
        f"otel-replay: {n} recording{'s' if n != 1 else ''} in {cassette} "
        f"{'was' if n == 1 else 'were'} not used by any test: {shown}"
    )


def fingerprints(cassette: Cassette) -> list[Fingerprint]:
    """Each interaction's (request, response) hashes: the request as the built-in rules
    normalise it (fresh ids and timestamps do not make it another request), the
    response as the cassette holds it."""
    prints = []
    for exchange in cassette.interactions:
        request = DEFAULT.normalize(exchange.request)
        response = interaction_dict(exchange)["response"]  # as every format version writes it
        prints.append(
            (
                digest([request.component(name) for name in COMPONENTS])[:SHORT_HASH_DIGITS],
                digest(response)[:SHORT_HASH_DIGITS],
            )
        )
    return prints


@dataclass(slots=True)
class CassetteChange:
    """How one cassette the run wrote differs from before the run: interactions whose
    request is new (``added``), gone (``removed``), or kept with another response
    (``changed``). ``before`` is None for a cassette the run created."""

    cassette: str
    before: int | None
    after: int
    added: int
    removed: int
    changed: int

    def line(self, shown: str) -> str:
        n = self.after
        head = f"wrote {shown}: {n} interaction{'' if n == 1 else 's'}"
        if self.before is None:
            return f"{head} (new)"
        parts = [f"+{self.added} added", f"−{self.removed} removed"]
        if self.changed:
            parts.append(f"{self.changed} response{'' if self.changed == 1 else 's'} changed")
        unchanged = not (self.added or self.removed or self.changed)
        return f"{head} (was {self.before}): " + ("unchanged" if unchanged else ", ".join(parts))

    def to_json(self) -> dict[str, Any]:
        return {
            "cassette": self.cassette,
            "before": self.before,
            "after": self.after,
            "added": self.added,
            "removed": self.removed,
            "changed": self.changed,
        }


def compare(
    cassette: str, before: Sequence[Fingerprint] | None, after: Sequence[Fingerprint]
) -> CassetteChange:
    """The change from ``before`` to ``after``: interactions pair up by request, in order
    among equal requests; a pair whose responses differ is ``changed``."""
    waiting: dict[str, list[str]] = {}
    for request, response in before or ():
        waiting.setdefault(request, []).append(response)
    added = changed = 0
    for request, response in after:
        earlier = waiting.get(request)
        if not earlier:
            added += 1
        elif earlier.pop(0) != response:
            changed += 1
    removed = sum(len(rest) for rest in waiting.values())
    count = None if before is None else len(before)
    return CassetteChange(cassette, count, len(after), added, removed, changed)
