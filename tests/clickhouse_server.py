"""A ClickHouse to read from: chDB (``make backends`` installs it in its own venv,
``.venv/chdb``) behind ``otel_replay/testing/clickhouse_http.py``, with the Collector
ClickHouse exporter's schema (``backend_fixtures/clickhouse-otel-traces.sql``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from otel_replay.testing.clickhouse_http import ClickHouse, running

SCHEMA = Path(__file__).resolve().parent / "backend_fixtures" / "clickhouse-otel-traces.sql"
USER, PASSWORD = "otel", "replay-pw"


def chdb_python() -> Path:
    """The interpreter of the chDB venv beside the one running (``make backends``)."""
    return Path(sys.prefix) / "chdb" / "bin" / "python"


@contextmanager
def clickhouse(data_dir: Path) -> Iterator[ClickHouse]:
    """The exporter's tables in chDB, served on a free loopback port for the block."""
    with running(chdb_python(), data_dir, SCHEMA, USER, PASSWORD) as server:
        yield server
