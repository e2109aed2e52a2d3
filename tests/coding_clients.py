"""Where the real coding-agent CLIs are: installed by ``make test`` (``make clients``) from
the versions pinned in ``tests/clients/package.json``."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ROOT / ".venv" / "clients" / "node_modules" / ".bin"


def client_cli(name: str) -> Path:
    """The path of a pinned CLI (``claude``, ``codex``); a test fails, never skips, when
    it is missing: the suite is meant to prove the real clients work."""
    path = CLIENTS / name
    if not path.exists():
        pytest.fail(f"{name} is not installed at {path}: run `make clients` (make test does)")
    return path
