"""A ClickHouse to read from: chDB (``make backends`` installs it in its own venv,
``.venv/chdb``) behind ``otel_replay/testing/clickhouse_http.py``, with the Collector
ClickHouse exporter's schema (``backend_fixtures/clickhouse-otel-traces.sql``). Also
used by ``benchmarks/backends.py``."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "tests" / "backend_fixtures" / "clickhouse-otel-traces.sql"
SHIM = ROOT / "otel_replay" / "testing" / "clickhouse_http.py"
USER, PASSWORD = "otel", "replay-pw"


def chdb_python() -> Path:
    """The interpreter of the chDB venv beside the one running (``make backends``)."""
    return Path(sys.prefix) / "chdb" / "bin" / "python"


@dataclass
class ClickHouse:
    url: str  # http://127.0.0.1:PORT

    def query(self, sql: str, data: bytes = b"") -> bytes:
        request = urllib.request.Request(
            f"{self.url}/?query={urllib.parse.quote(sql)}",
            data=data or None,
            method="POST",
            headers={
                "Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
            },
        )
        with urllib.request.urlopen(request, timeout=600) as answer:
            return answer.read()

    def insert(self, rows: Iterable[dict[str, Any]], table: str = "otel.otel_traces") -> None:
        """Rows into the table, as the exporter inserts them (JSONEachRow)."""
        data = "".join(json.dumps(row) + "\n" for row in rows).encode()
        self.query(f"INSERT INTO {table} FORMAT JSONEachRow", data)


@contextmanager
def clickhouse(data_dir: Path) -> Iterator[ClickHouse]:
    """chDB's HTTP shim on a free loopback port, with the exporter's tables; stops at the
    end (its data in ``data_dir``)."""
    python = chdb_python()
    if not python.exists():
        raise RuntimeError(f"chdb is not installed at {python}: run `make backends`")
    env = {"PATH": os.environ.get("PATH", ""), "TZ": "UTC", "HOME": str(data_dir)}
    shim = subprocess.Popen(
        [str(python), str(SHIM), str(data_dir / "chdb"), "--schema", str(SCHEMA),
         "--user", USER, "--password", PASSWORD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=data_dir,
        env=env,
        text=True,
    )  # fmt: skip
    try:
        assert shim.stdout is not None
        line = shim.stdout.readline()
        if not line:
            raise RuntimeError("the ClickHouse shim did not start")
        yield ClickHouse(f"http://127.0.0.1:{json.loads(line)['port']}")
    finally:
        assert shim.stdin is not None
        shim.stdin.close()
        try:
            shim.wait(30)
        except subprocess.TimeoutExpired:
            shim.kill()
            shim.wait()
        if shim.stdout is not None:
            shim.stdout.close()
