"""ClickHouse: the OpenTelemetry Collector ClickHouse exporter's ``otel_traces`` table,
over ClickHouse's HTTP interface, back into OTLP spans.

One query selects on the table's own keys (``ServiceName`` leads its ``ORDER BY``,
``Timestamp`` its partitions, ``TraceId`` a bloom filter; a trace's time range comes from
the exporter's ``…_trace_id_ts`` table when it is there) and answers ``JSONEachRow``, read
a row at a time: a week of spans is never held at once. The exporter keeps every attribute
value as text; numbers and booleans are read back as such (``rows.py``), events and links
come from the nested columns.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from itertools import groupby
from typing import IO

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay.core import envvars
from otel_replay.core.errors import ConfigError, SourceError
from otel_replay.readers import Selection
from otel_replay.sources.pull import Piece, Pull
from otel_replay.sources.rows import Batcher, Row, span_of
from otel_replay.sources.transport import Backend, basic_auth
from otel_replay.sources.where import Where

__all__ = ["ClickHousePull", "query_text"]

DEFAULT_DATABASE = "default"
DEFAULT_TABLE = "otel_traces"
_HEX_ID = re.compile(r"[0-9a-f]{32}")
_COLUMNS = """TraceId, SpanId, ParentSpanId, TraceState, SpanName, SpanKind, ServiceName,
  ResourceAttributes, ScopeName, ScopeVersion, SpanAttributes,
  toUnixTimestamp64Nano(Timestamp) AS StartNs, Duration, StatusCode, StatusMessage,
  arrayMap(t -> toUnixTimestamp64Nano(t), `Events.Timestamp`) AS EventTimes,
  `Events.Name` AS EventNames, `Events.Attributes` AS EventAttributes,
  `Links.TraceId` AS LinkTraceIds, `Links.SpanId` AS LinkSpanIds,
  `Links.TraceState` AS LinkStates, `Links.Attributes` AS LinkAttributes"""


class _ClickHouse(Backend):
    def refuses(self, code: int, text: str) -> bool:
        # ClickHouse's own code for refused credentials: 516 AUTHENTICATION_FAILED
        return super().refuses(code, text) or text.startswith("Code: 516.")


class ClickHousePull(Pull):
    """Spans from the exporter's table: ``clickhouse+http://HOST:PORT/DATABASE?table=…``."""

    def __init__(self, where: Where, selection: Selection) -> None:
        super().__init__(where, selection)
        user = where.user or os.environ.get(envvars.CLICKHOUSE_USER)
        password = where.password or os.environ.get(envvars.CLICKHOUSE_PASSWORD) or ""
        headers = {"Authorization": basic_auth(user, password)} if user else {}
        auth = f"{envvars.CLICKHOUSE_USER} / {envvars.CLICKHOUSE_PASSWORD}"
        self.backend: Backend = _ClickHouse(where, headers, auth)
        self.database = where.path or DEFAULT_DATABASE
        self.table = where.query.get("table", DEFAULT_TABLE)
        for trace_id in selection.trace_ids or ():
            if not _HEX_ID.fullmatch(trace_id):
                raise ConfigError(f"--trace-id {trace_id}: not 32 hexadecimal digits")

    def fetch(self) -> Iterator[ExportTraceServiceRequest]:
        yield from self._batches(self._rows(by_trace=False))

    def groups(self) -> Iterator[tuple[str, Piece]]:
        """One query, ordered by trace: each trace's spans in turn."""
        for trace_id, rows in groupby(self._rows(by_trace=True), key=_trace_of):
            if self.selection.trace_ids:
                self.found.add(trace_id)
            yield trace_id, Piece(self.name, self._batches(rows))
        missing = sorted((self.selection.trace_ids or frozenset()) - self.found)
        if missing:
            raise self.no_trace(missing)

    def _batches(self, rows: Iterator[Row]) -> Iterator[ExportTraceServiceRequest]:
        batcher = Batcher()
        for row in rows:
            full = batcher.add(row["ServiceName"], row, span_of(row))
            if full is not None:
                yield full
        last = batcher.take()
        if last is not None:
            yield last

    def _rows(self, *, by_trace: bool) -> Iterator[Row]:
        window = self._trace_window() if self.selection.trace_ids else None
        sql = query_text(self.database, self.table, self.selection, window, by_trace=by_trace)
        for line in self.backend.lines(self._query(sql)):
            self.read += len(line)
            if line.strip():
                yield self._row(line)

    def _row(self, line: bytes) -> Row:
        if line.startswith(b"Code: "):  # an error met after the answer began, as text
            raise SourceError(self.name, line.decode("utf-8", "replace").strip())
        try:
            row = json.loads(line)
        except ValueError:
            raise SourceError(self.name, f"a row that is not JSON: {line[:200]!r}") from None
        if not isinstance(row, dict):
            raise SourceError(self.name, f"a row that is not an object: {line[:200]!r}")
        if "exception" in row:  # an error met after the answer began
            raise SourceError(self.name, str(row["exception"]).splitlines()[0])
        return row

    def _trace_window(self) -> str | None:
        """The time range of the asked-for traces, from ``{table}_trace_id_ts``."""
        side = f"{self.table}_trace_id_ts"
        exists = self._query(f"EXISTS TABLE {_name(self.database)}.{_name(side)}")
        if self.backend.read(exists).strip() != b"1":
            return None
        ids = _ids(self.selection)
        found = f"FROM {_name(self.database)}.{_name(side)} WHERE TraceId IN ({ids})"
        return (
            f"Timestamp >= (SELECT min(Start) {found})"
            f" AND Timestamp <= (SELECT max(End) + 1 {found})"
        )

    def _query(self, sql: str) -> IO[bytes]:
        answer = self.backend.open(
            "/",
            {"database": self.database},
            body=sql.encode(),
            accept="*/*",
            missing=f"no such database or table ({self.database}.{self.table})",
        )
        assert answer is not None
        return answer


def query_text(
    database: str, table: str, selection: Selection, window: str | None, *, by_trace: bool
) -> str:
    """The SELECT for a selection, on the table's keys, answering JSONEachRow."""
    where: list[str] = []
    if selection.trace_ids:
        where.append(f"TraceId IN ({_ids(selection)})")
    if window:
        where.append(window)
    if selection.services:
        names = ", ".join(_text(s) for s in sorted(selection.services))
        where.append(f"ServiceName IN ({names})")
    if selection.since_ns is not None:
        where.append(f"Timestamp >= fromUnixTimestamp64Nano({int(selection.since_ns)})")
    if selection.until_ns is not None:
        where.append(f"Timestamp < fromUnixTimestamp64Nano({int(selection.until_ns)})")
    order = "TraceId, Timestamp" if by_trace else "Timestamp"
    return (
        f"SELECT {_COLUMNS}\nFROM {_name(database)}.{_name(table)}\n"
        + (f"WHERE {' AND '.join(where)}\n" if where else "")
        + f"ORDER BY {order}\nFORMAT JSONEachRow"
    )


def _trace_of(row: Row) -> str:
    return str(row.get("TraceId") or "")


def _ids(selection: Selection) -> str:
    return ", ".join(_text(t) for t in sorted(selection.trace_ids or ()))


def _text(value: str) -> str:
    """A ClickHouse string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _name(value: str) -> str:
    """A ClickHouse identifier."""
    return "`" + value.replace("\\", "\\\\").replace("`", "\\`") + "`"
