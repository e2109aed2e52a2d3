"""otel-replay: record LLM agent model traffic as OpenTelemetry spans and replay it
offline, deterministically, with zero model calls.

The public API is what ``__all__`` names; everything else is private. Names are imported
on first use, so ``import otel_replay`` stays light (the pytest plugin and the CLI start
fast).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from otel_replay._version import __version__

__all__ = [
    "AsyncReplayTransport",
    "CanonicalRequest",
    "Cassette",
    "CassetteError",
    "ConfigError",
    "EgressBlocked",
    "Exchange",
    "OtelReplayError",
    "ReplayMiss",
    "ReplayTransport",
    "Response",
    "SSEEvent",
    "SnapshotMismatch",
    "Summary",
    "__version__",
    "build",
    "build_file",
    "dump",
    "load",
    "record",
    "redirect_telemetry",
    "replay",
    "tool",
]

_LAZY: dict[str, str] = {
    "record": "otel_replay.frontends.api",
    "ReplayTransport": "otel_replay.frontends.transport",
    "AsyncReplayTransport": "otel_replay.frontends.transport",
    "replay": "otel_replay.frontends.api",
    "redirect_telemetry": "otel_replay.frontends.telemetry",
    "Cassette": "otel_replay.cassette.model",
    "load": "otel_replay.cassette.model",
    "dump": "otel_replay.cassette.model",
    "build": "otel_replay.pipeline.build",
    "build_file": "otel_replay.pipeline.build",
    "Exchange": "otel_replay.core.exchange",
    "CanonicalRequest": "otel_replay.core.exchange",
    "Response": "otel_replay.core.exchange",
    "SSEEvent": "otel_replay.core.exchange",
    "OtelReplayError": "otel_replay.core.errors",
    "ReplayMiss": "otel_replay.core.errors",
    "CassetteError": "otel_replay.core.errors",
    "ConfigError": "otel_replay.core.errors",
    "EgressBlocked": "otel_replay.core.errors",
    "SnapshotMismatch": "otel_replay.core.errors",
    "Summary": "otel_replay.session.session",
    "tool": "otel_replay.hooks.decorator",
}

if TYPE_CHECKING:
    from otel_replay.cassette.model import Cassette, dump, load
    from otel_replay.core.errors import (
        CassetteError,
        ConfigError,
        EgressBlocked,
        OtelReplayError,
        ReplayMiss,
        SnapshotMismatch,
    )
    from otel_replay.core.exchange import CanonicalRequest, Exchange, Response, SSEEvent
    from otel_replay.frontends.api import record, replay
    from otel_replay.frontends.telemetry import redirect_telemetry
    from otel_replay.frontends.transport import AsyncReplayTransport, ReplayTransport
    from otel_replay.hooks.decorator import tool
    from otel_replay.pipeline.build import build, build_file
    from otel_replay.session.session import Summary


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'otel_replay' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
