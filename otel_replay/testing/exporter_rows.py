"""OTLP spans as the OpenTelemetry Collector ClickHouse exporter writes them into its
``otel_traces`` table, as ``JSONEachRow`` rows: ids in hex, the span kind and status as
the words ``traceutil`` gives them (``Client``, ``Error``), times as ``DateTime64(9)``
text in UTC, every attribute value as ``pcommon.Value.AsString`` makes it (numbers in
decimal, booleans ``true``/``false``, arrays and maps as JSON, bytes as base64) and the
events and links in the ``Events.*`` / ``Links.*`` nested columns. For tests and
benchmarks that fill the table the way a Collector would; :func:`exporter_schema` makes the
table itself from the exporter's own DDL templates.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from otel_replay.otlp.attributes import any_value_to_python
from otel_replay.otlp.codec import iter_spans

__all__ = ["EXPORTER_SQL", "as_string", "exporter_rows", "exporter_schema", "timestamp"]

_KINDS = ("Unspecified", "Internal", "Server", "Client", "Producer", "Consumer")
_STATUS = ("Unset", "Ok", "Error")

EXPORTER_SQL = Path(sys.prefix) / "go" / "clickhouseexporter"
"""The exporter's DDL templates (``internal/sqltemplates/traces_*.sql`` of the release of
``collector/otelcol/go.mod``), copied there by ``make go`` from Go's module cache."""


def exporter_schema(
    database: str = "otel", table: str = "otel_traces", templates: Path = EXPORTER_SQL
) -> str:
    """The statements the exporter runs at start with ``create_schema: true`` (no cluster,
    its default ``MergeTree()`` engine, no TTL), rendered from its templates as its Go code
    renders them: the database, the spans table, the trace-time-range table and its
    materialized view; separated by ``;``."""
    if not (templates / "traces_table.sql").exists():
        raise RuntimeError(f"no ClickHouse exporter DDL in {templates}: run `make go`")

    def render(name: str, *args: str) -> str:
        # Go's fmt: %q quotes a name as a Go string ("otel"), %s puts it as it is
        return (templates / name).read_text(encoding="utf-8").replace("%q", "%s") % args

    def quoted(name: str) -> str:
        return json.dumps(name)

    engine, none = "MergeTree()", ""
    return ";\n".join(
        [
            f"CREATE DATABASE IF NOT EXISTS {quoted(database)}",
            render("traces_table.sql", quoted(database), quoted(table), none, engine, none),
            render("traces_id_ts_lookup_table.sql", database, table, none, engine, none),
            render("traces_id_ts_lookup_mv.sql", database, table, none, *(database, table) * 2),
        ]
    )


def timestamp(ns: int) -> str:
    """``DateTime64(9)`` text, UTC."""
    moment = datetime.fromtimestamp(ns // 10**9, UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + f".{ns % 10**9:09d}"


def as_string(value: AnyValue) -> str:
    """An attribute value as the exporter stores it."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return "true" if value.bool_value else "false"
    if kind == "int_value":
        return str(value.int_value)
    if kind == "double_value":
        number = value.double_value
        return str(int(number)) if number.is_integer() else repr(number)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    if kind is None:
        return ""
    return json.dumps(_plain(any_value_to_python(value)), separators=(",", ":"))


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _map(attributes: Any) -> dict[str, str]:
    kvs: list[KeyValue] = list(attributes)
    return {kv.key: as_string(kv.value) for kv in kvs}


def exporter_rows(request: ExportTraceServiceRequest) -> Iterator[dict[str, Any]]:
    """One row per span, as the exporter inserts it."""
    for resource, scope, span in iter_spans(request):
        resource_map = _map(resource.attributes)
        yield {
            "Timestamp": timestamp(span.start_time_unix_nano),
            "TraceId": span.trace_id.hex(),
            "SpanId": span.span_id.hex(),
            "ParentSpanId": span.parent_span_id.hex(),
            "TraceState": span.trace_state,
            "SpanName": span.name,
            "SpanKind": _KINDS[span.kind] if span.kind < len(_KINDS) else "",
            "ServiceName": resource_map.get("service.name", ""),
            "ResourceAttributes": resource_map,
            "ScopeName": scope.name,
            "ScopeVersion": scope.version,
            "SpanAttributes": _map(span.attributes),
            "Duration": span.end_time_unix_nano - span.start_time_unix_nano,
            "StatusCode": _STATUS[span.status.code] if span.status.code < 3 else "",
            "StatusMessage": span.status.message,
            "Events.Timestamp": [timestamp(e.time_unix_nano) for e in span.events],
            "Events.Name": [e.name for e in span.events],
            "Events.Attributes": [_map(e.attributes) for e in span.events],
            "Links.TraceId": [link.trace_id.hex() for link in span.links],
            "Links.SpanId": [link.span_id.hex() for link in span.links],
            "Links.TraceState": [link.trace_state for link in span.links],
            "Links.Attributes": [_map(link.attributes) for link in span.links],
        }
