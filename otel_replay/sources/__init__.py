"""Tracing backends as span sources (``build --from`` / ``doctor --from``).

A source reads a backend's answers into the OTLP export requests the span readers take,
one small module per backend — an OpenTelemetry exporter in reverse: ``phoenix.py``
(Phoenix's REST span API), ``otlp_api.py`` (Jaeger v2 ``api/v3`` and Tempo, which answer
OTLP), ``clickhouse.py`` (the Collector ClickHouse exporter's table, rows read by
``rows.py``), ``mlflow.py`` (MLflow's tracing server), ``langfuse.py`` (Langfuse's
public API: observations as GenAI spans).
``open_source`` picks one from a ``--from`` address; the selection (trace ids,
services, time window) goes into the backend's own query.
"""

from __future__ import annotations

from otel_replay.core.errors import ConfigError
from otel_replay.readers import Selection
from otel_replay.sources.pull import Pull
from otel_replay.sources.where import BACKENDS, Where, parse_where

__all__ = ["BACKENDS", "Pull", "Where", "open_source", "parse_where"]


def open_source(address: str, selection: Selection) -> Pull:
    """The pull ``--from ADDRESS`` names, for ``selection`` (nothing is read yet)."""
    where = parse_where(address)
    if where.backend == "phoenix":
        from otel_replay.sources.phoenix import PhoenixPull

        if selection.services:
            raise ConfigError(
                "--service: Phoenix keeps no service.name; name the project in the address "
                "(phoenix+http://HOST:PORT/PROJECT)"
            )
        return PhoenixPull(where, selection)
    if where.backend in ("jaeger", "tempo"):
        from otel_replay.sources.otlp_api import JaegerPull, TempoPull

        return (JaegerPull if where.backend == "jaeger" else TempoPull)(where, selection)
    if where.backend == "mlflow":
        from otel_replay.sources.mlflow import MlflowPull

        return MlflowPull(where, selection)
    if where.backend == "langfuse":
        from otel_replay.sources.langfuse import LangfusePull

        return LangfusePull(where, selection)
    from otel_replay.sources.clickhouse import ClickHousePull

    return ClickHousePull(where, selection)
