"""The run modes, and the one a run gets when none is asked for."""

from __future__ import annotations

import os

from otel_replay.core import envvars

__all__ = ["MODES", "RECORDING", "default_mode"]

MODES = ("strict", "auto", "record", "off")

RECORDING = frozenset({"record", "auto"})
"""The modes whose live calls are recorded (``auto`` forwards a miss and records it)."""


def default_mode(environ: dict[str, str] | None = None) -> str:
    """``strict`` when ``CI`` is set (and not false-ish), else ``auto``."""
    env = os.environ if environ is None else environ
    ci = env.get(envvars.CI, "").strip().lower()
    return "strict" if ci and ci not in ("0", "false", "no") else "auto"
