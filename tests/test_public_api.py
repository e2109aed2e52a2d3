"""The public API is exactly what ``otel_replay.__all__`` names, and importing the package
stays light."""

from __future__ import annotations

import subprocess
import sys

import otel_replay

EXPECTED = [
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


def test_all_is_pinned() -> None:
    assert sorted(otel_replay.__all__) == EXPECTED
    assert otel_replay.__version__ == "0.2.0"


def test_every_name_resolves() -> None:
    for name in otel_replay.__all__:
        assert getattr(otel_replay, name) is not None
    assert issubclass(otel_replay.ReplayMiss, otel_replay.OtelReplayError)
    assert issubclass(otel_replay.EgressBlocked, ConnectionError)


def test_unknown_names_raise_attribute_error() -> None:
    assert not hasattr(otel_replay, "no_such_name")


def test_import_is_light() -> None:
    code = (
        "import sys, otel_replay; "
        "print(sorted(m for m in ('aiohttp', 'grpc', 'openai', 'google.protobuf') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_transports_import_without_their_http_libraries() -> None:
    # httpx2 and httpx are imported when a request comes, from the request's own library
    code = (
        "import sys; sys.modules['httpx2'] = sys.modules['httpx'] = None; "
        "import otel_replay; otel_replay.ReplayTransport; otel_replay.AsyncReplayTransport; "
        "print(sorted(m for m in ('aiohttp', 'httpx', 'httpx2') if sys.modules.get(m)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
