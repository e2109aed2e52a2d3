"""otel-replay: record LLM agent model traffic as OpenTelemetry spans and replay it
offline, deterministically, with zero model calls.

The public API is what ``__all__`` names; everything else is private. Names are imported
on first use, so ``import otel_replay`` stays light (the pytest plugin and the CLI start
fast).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "CanonicalRequest",
    "Cassette",
    "CassetteError",
    "ConfigError",
    "EgressBlocked",
    "Exchange",
    "OtelReplayError",
    "ReplayMiss",
    "Response",
    "SSEEvent",
    "Summary",
    "__version__",
    "build",
    "build_file",
    "dump",
    "load",
    "record",
    "replay",
]

_LAZY: dict[str, str] = {
    "record": "otel_replay.api",
    "replay": "otel_replay.api",
    "Cassette": "otel_replay.cassette",
    "load": "otel_replay.cassette",
    "dump": "otel_replay.cassette",
    "build": "otel_replay.build",
    "build_file": "otel_replay.build",
    "Exchange": "otel_replay.exchange",
    "CanonicalRequest": "otel_replay.exchange",
    "Response": "otel_replay.exchange",
    "SSEEvent": "otel_replay.exchange",
    "OtelReplayError": "otel_replay.errors",
    "ReplayMiss": "otel_replay.errors",
    "CassetteError": "otel_replay.errors",
    "ConfigError": "otel_replay.errors",
    "EgressBlocked": "otel_replay.errors",
    "Summary": "otel_replay.session",
}

if TYPE_CHECKING:
    from otel_replay.api import record, replay
    from otel_replay.build import build, build_file
    from otel_replay.cassette import Cassette, dump, load
    from otel_replay.errors import (
        CassetteError,
        ConfigError,
        EgressBlocked,
        OtelReplayError,
        ReplayMiss,
    )
    from otel_replay.exchange import CanonicalRequest, Exchange, Response, SSEEvent
    from otel_replay.session import Summary


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'otel_replay' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
