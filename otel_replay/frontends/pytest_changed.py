"""Which tests use which cassettes, and running only those a change touches.

Each run of the pytest plugin writes the map of its tests to the cassettes their blocks
used to ``.otel-replay/tests.json`` at the run's root (on the pytest-xdist controller, from
every worker's blocks; merged with the map already there, so a partial run keeps what it
did not run). ``--otel-replay-changed[=REF]`` then deselects each test the map knows whose
cassettes all equal git ``REF``'s (default: the working tree against ``HEAD``, new files
included); a test the map does not know runs.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from otel_replay.cassette.model import write_atomic

__all__ = ["MAP_PATH", "changed_cassettes", "load_map", "select", "update_map"]

MAP_PATH = Path(".otel-replay") / "tests.json"
"""Where the map lives, under the run's root directory."""
_VERSION = 1
_GIT_SECONDS = 60


def load_map(root: Path) -> dict[str, list[str]]:
    """The map at ``root``: test id to the cassettes (relative to ``root``) its blocks
    used; empty when there is none or it cannot be read (every test then runs)."""
    try:
        doc = json.loads((root / MAP_PATH).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    tests = doc.get("tests") if isinstance(doc, dict) else None
    if not isinstance(tests, dict):
        return {}
    return {
        str(test): [str(c) for c in cassettes]
        for test, cassettes in tests.items()
        if isinstance(cassettes, list)
    }


def update_map(root: Path, blocks: Iterable[tuple[str, str]]) -> str | None:
    """Merge ``blocks`` (test id, cassette path) into the map at ``root``: each test that
    ran is mapped to the cassettes it used now. Returns why it could not be written, or
    None."""
    used: dict[str, set[str]] = {}
    for test, cassette in blocks:
        used.setdefault(test, set()).add(_relative(cassette, root))
    if not used:
        return None
    tests = load_map(root)
    tests.update({test: sorted(cassettes) for test, cassettes in used.items()})
    doc = {"version": _VERSION, "tests": dict(sorted(tests.items()))}
    path = root / MAP_PATH
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(doc, indent=1) + "\n")
    except OSError as exc:
        return (
            f"otel-replay: cannot write the map of tests to cassettes {path}: {exc.strerror or exc}"
        )
    return None


def changed_cassettes(root: Path, ref: str) -> set[str]:
    """The files (relative to ``root``, ``/``-separated) that differ between git ``ref``
    and the working tree, untracked ones included. A bad ref or no repository is a usage
    error in one line."""
    top = Path(_git(root, "rev-parse", "--show-toplevel").strip())
    # both name files relative to the top when run from it
    names = _git(top, "diff", "--name-only", "-z", ref, "--").split("\0")
    names += _git(top, "ls-files", "--others", "--exclude-standard", "-z").split("\0")
    return {_relative(str(top / name), root) for name in names if name}


def select(
    items: Sequence[pytest.Item], tests: dict[str, list[str]], changed: set[str]
) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """``items`` split into those to run (unknown to the map, or using a changed cassette)
    and those deselected."""
    kept, deselected = [], []
    for item in items:
        cassettes = tests.get(item.nodeid)
        if cassettes is None or any(c in changed for c in cassettes):
            kept.append(item)
        else:
            deselected.append(item)
    return kept, deselected


def _git(cwd: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=_GIT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise pytest.UsageError(f"otel-replay: --otel-replay-changed needs git: {exc}") from None
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["git failed"])[0]
        hint = " (write the ref as --otel-replay-changed=REF)" if args[0] == "diff" else ""
        raise pytest.UsageError(f"otel-replay: --otel-replay-changed: git {args[0]}: {said}{hint}")
    return done.stdout


def _relative(path: str, root: Path) -> str:
    """``path`` relative to ``root`` with ``/`` separators (absolute when outside it)."""
    full = Path(os.path.abspath(path))
    try:
        return full.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return full.as_posix()
