"""The real Go programs the tests run, built by ``make`` from pinned Go modules into
``.venv/go/bin``: the OpenTelemetry Collector of ``collector/otelcol`` (core and contrib
components of one release) and Jaeger v2 (``tests/jaeger``). Each runs on free loopback
ports, with its working directory in a temporary folder, and always stops: ``SIGTERM``
first, so a Collector flushes its batches and files before the test reads them."""

from __future__ import annotations

import json
import socket
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from processes import answers, free_port, running

ROOT = Path(__file__).resolve().parents[1]
COLLECTOR = ROOT / "collector"
GO_BIN = Path(sys.prefix) / "go" / "bin"


def program(name: str) -> Path:
    path = GO_BIN / name
    if not path.exists():
        raise RuntimeError(f"{path} is not built: run `make go`")
    return path


@dataclass
class Collector:
    """A running ``otelcol``: its OTLP/HTTP base URL and gRPC address."""

    http: str
    grpc: str
    log: Path


@contextmanager
def otelcol(config: str, directory: Path, **env: str) -> Iterator[Collector]:
    """``otelcol --config collector/CONFIG`` as shipped, its endpoints on free loopback
    ports (the variables the file reads), and ``env`` for the rest. Its own metrics are
    off (``--set``), since every Collector would otherwise serve them on port 8888."""
    grpc, http, health = (f"127.0.0.1:{free_port()}" for _ in range(3))
    ports = {
        "OTLP_GRPC_ENDPOINT": grpc,
        "OTLP_HTTP_ENDPOINT": http,
        "HEALTH_CHECK_ENDPOINT": health,
    }
    argv = [
        str(program("otelcol")),
        "--config",
        str(COLLECTOR / config),
        "--set=service.telemetry.metrics.level=none",
    ]
    with running(argv, directory, {**ports, **env}, lambda: answers(f"http://{health}/")) as log:
        yield Collector(http=f"http://{http}", grpc=grpc, log=log)


@dataclass
class Jaeger:
    """A running Jaeger v2: its query service's URL and its OTLP/HTTP base URL."""

    url: str
    otlp_http: str


@contextmanager
def jaeger(directory: Path) -> Iterator[Jaeger]:
    """Jaeger v2 with memory storage (``tests/jaeger/config.yaml``)."""
    query, grpc, otlp = (f"127.0.0.1:{free_port()}" for _ in range(3))
    env = {"JAEGER_QUERY_HTTP": query, "JAEGER_QUERY_GRPC": grpc, "JAEGER_OTLP_HTTP": otlp}
    config = Path(__file__).resolve().parent / "jaeger" / "config.yaml"
    argv = [str(program("jaeger")), "--config", str(config)]
    url = f"http://{query}"

    def ready() -> bool:  # its receiver may start listening after its query service
        return answers(f"{url}/api/v3/services") and listening(otlp)

    with running(argv, directory, env, ready):
        yield Jaeger(url=url, otlp_http=f"http://{otlp}")


def listening(address: str) -> bool:
    """Something accepts connections at ``address`` (``host:port``)."""
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError:
        return False
    return True


def holds(url: str, trace_id: str, spans: int) -> None:
    """Until the Jaeger at ``url`` answers the trace with ``spans`` spans (its storage
    writes as each export arrives)."""
    deadline = time.monotonic() + 30
    count = 0
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/api/v3/traces/{trace_id}", timeout=10) as answer:
                doc = json.loads(answer.read())
            count = sum(
                len(scope.get("spans", []))
                for resource in doc["result"]["resourceSpans"]
                for scope in resource.get("scopeSpans", [])
            )
            if count >= spans:
                return
        except urllib.error.HTTPError as exc:
            exc.close()
        time.sleep(0.1)
    raise AssertionError(f"Jaeger holds {count} of the trace's {spans} spans")
