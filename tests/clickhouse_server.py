"""A ClickHouse to read from: chDB (``make backends`` installs it in its own venv,
``.venv/chdb``) behind ``otel_replay/testing/clickhouse_http.py``, holding the tables the
Collector ClickHouse exporter creates, made from its own DDL templates (the module release
``collector/otelcol`` is built from; ``make go`` copies them out of Go's module cache)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from otel_replay.testing.clickhouse_http import ClickHouse, running
from otel_replay.testing.exporter_rows import exporter_schema

USER, PASSWORD = "otel", "replay-pw"


def chdb_python() -> Path:
    """The interpreter of the chDB venv beside the one running (``make backends``)."""
    return Path(sys.prefix) / "chdb" / "bin" / "python"


@contextmanager
def clickhouse(data_dir: Path) -> Iterator[ClickHouse]:
    """The exporter's tables in chDB, served on a free loopback port for the block."""
    schema = data_dir / "exporter-schema.sql"
    schema.write_text(exporter_schema(), encoding="utf-8")
    with running(chdb_python(), data_dir, schema, USER, PASSWORD) as server:
        yield server
