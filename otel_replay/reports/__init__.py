"""Files a run leaves for people and tools: the run report (``run``) and the misses file
(``misses``), both written through :func:`write_json`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from otel_replay.cassette.model import write_atomic
from otel_replay.core.errors import ConfigError

__all__ = ["write_json"]


def _unchanged(text: str) -> str:
    return text


def write_json(path: Path, doc: Any, redact: Callable[[str], str] = _unchanged) -> None:
    """``doc`` as JSON (indent 2, the text through ``redact``, a trailing newline) written
    crash-safely to ``path``; a ConfigError naming the file when it cannot be written."""
    text = redact(json.dumps(doc, indent=2)) + "\n"
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror or exc}") from None
