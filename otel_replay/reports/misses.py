"""The misses file: every miss of a replay run, kept beside its cassette for ``why``.

``CASSETTE.misses.json`` holds, per miss, the message, the component that differed, the
request (provider, path, redacted body) and which recordings were already used. A run
without a miss removes the file, so ``why`` never explains a stale one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otel_replay.cassette.model import locked
from otel_replay.core.errors import ConfigError
from otel_replay.reports import write_json

__all__ = ["Miss", "last_miss", "misses_path", "write_misses"]


def misses_path(cassette: Path) -> Path:
    """Where a run's misses are kept for ``otel-replay why``."""
    return cassette.with_name(cassette.stem + ".misses.json")


@dataclass(slots=True)
class Miss:
    """One request that found no recording."""

    message: str
    component: str | None
    provider: str
    path: str
    body: Any
    used: list[int]
    keyless: bool = False
    """An auto-mode miss that could not go live: the caller holds no key of its provider."""

    def brief(self) -> dict[str, Any]:
        """The miss without its request body: what a run report lists."""
        return {
            "message": self.message,
            "component": self.component,
            "provider": self.provider,
            "path": self.path,
        }

    def to_json(self) -> dict[str, Any]:
        """The miss as the misses file holds it."""
        return {**self.brief(), "body": self.body, "used": self.used}


def write_misses(
    cassette: Path,
    misses: Sequence[Miss],
    redact: Callable[[str], str],
    earlier: Callable[[Path], bool] | None = None,
) -> None:
    """Write the misses file of ``cassette`` (its text through ``redact``), or remove it
    when there are none. Raises ConfigError when it cannot be written.

    ``earlier(path)``, when given, is asked under the file's lock whether an earlier part
    of the same run (a block of a test suite) wrote it: then the misses it holds stay,
    for ``why``, and these follow them."""
    path = misses_path(cassette)
    if earlier is None:
        _write(cassette, path, [], misses, redact)
        return
    with locked(path) as target:
        kept = _earlier_misses(target) if earlier(target) else []
        _write(cassette, target, kept, misses, redact)


def _write(
    cassette: Path,
    path: Path,
    kept: list[Any],
    misses: Sequence[Miss],
    redact: Callable[[str], str],
) -> None:
    if not misses:
        if not kept:
            path.unlink(missing_ok=True)
        return
    doc = {"cassette": str(cassette), "misses": kept + [m.to_json() for m in misses]}
    write_json(path, doc, redact)


def _earlier_misses(path: Path) -> list[Any]:
    """The misses ``path`` holds; none when it is missing or not a misses file."""
    try:
        misses = json.loads(path.read_text(encoding="utf-8"))["misses"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return list(misses) if isinstance(misses, list) else []


def last_miss(cassette: Path) -> dict[str, Any] | None:
    """The last miss recorded for ``cassette``, as written; None when there is none.
    Raises ConfigError when the file is not a misses file."""
    path = misses_path(cassette)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        misses = data["misses"]
        return dict(misses[-1]) if misses else None
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise ConfigError(f"{path}: not a misses file ({exc})") from exc
