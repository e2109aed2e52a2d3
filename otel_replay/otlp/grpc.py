"""The OTLP/gRPC receiver: TraceService, LogsService and MetricsService on grpc.aio.

It runs on the caller's event loop, stores through the same ``TraceStore`` as the HTTP
receiver and answers with the same partial-success semantics. gRPC itself handles framing
and compression; a store failure is answered with INTERNAL, never raised into the agent.
"""

from __future__ import annotations

import logging
from typing import Any

import grpc
from grpc import aio
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2 as logs_pb
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc as logs_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as metrics_pb
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc as metrics_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as trace_pb
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc as trace_grpc

from otel_replay.core.errors import ConfigError
from otel_replay.otlp.http import logs_response, metrics_response, trace_response
from otel_replay.otlp.store import (
    StoreSource,
    current_store,
    ingest_logs,
    ingest_metrics,
    ingest_traces,
)

logger = logging.getLogger(__name__)


async def _internal(context: aio.ServicerContext[Any, Any], what: str, exc: Exception) -> None:
    logger.error("OTLP/gRPC %s: failed to store a batch", what, exc_info=exc)
    await context.abort(grpc.StatusCode.INTERNAL, f"{type(exc).__name__}")


class _TraceServicer(trace_grpc.TraceServiceServicer):
    def __init__(self, store: StoreSource) -> None:
        self._store = store

    async def Export(
        self, request: trace_pb.ExportTraceServiceRequest, context: aio.ServicerContext[Any, Any]
    ) -> trace_pb.ExportTraceServiceResponse:
        try:
            rejected, why = ingest_traces(current_store(self._store), request)
        except Exception as exc:
            await _internal(context, "traces", exc)
            raise  # not reached: abort() raises
        if rejected:
            logger.warning("OTLP/gRPC traces: rejected %d: %s", rejected, why)
        return trace_response(rejected, why)


class _LogsServicer(logs_grpc.LogsServiceServicer):
    def __init__(self, store: StoreSource) -> None:
        self._store = store

    async def Export(
        self, request: logs_pb.ExportLogsServiceRequest, context: aio.ServicerContext[Any, Any]
    ) -> logs_pb.ExportLogsServiceResponse:
        try:
            rejected, why = ingest_logs(current_store(self._store), request)
        except Exception as exc:
            await _internal(context, "logs", exc)
            raise
        if rejected:
            logger.warning("OTLP/gRPC logs: rejected %d: %s", rejected, why)
        return logs_response(rejected, why)


class _MetricsServicer(metrics_grpc.MetricsServiceServicer):
    def __init__(self, store: StoreSource) -> None:
        self._store = store

    async def Export(
        self,
        request: metrics_pb.ExportMetricsServiceRequest,
        context: aio.ServicerContext[Any, Any],
    ) -> metrics_pb.ExportMetricsServiceResponse:
        try:
            ingest_metrics(current_store(self._store), request)
        except Exception as exc:
            await _internal(context, "metrics", exc)
            raise
        return metrics_response(0, "")


class GrpcReceiver:
    """OTLP/gRPC on one port, serving until ``stop()``."""

    def __init__(self, store: StoreSource, *, max_message: int = 32 * 1024 * 1024) -> None:
        self._store = store
        self._max_message = max_message
        self._server: aio.Server | None = None
        self.port: int | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Bind and start serving; return the bound port."""
        if self._server is not None:
            raise ConfigError("the OTLP/gRPC receiver is already started")
        server = aio.server(
            options=[
                ("grpc.max_receive_message_length", self._max_message),
                ("grpc.so_reuseport", 0),
            ]
        )
        trace_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]
            _TraceServicer(self._store), server
        )
        logs_grpc.add_LogsServiceServicer_to_server(  # type: ignore[no-untyped-call]
            _LogsServicer(self._store), server
        )
        metrics_grpc.add_MetricsServiceServicer_to_server(  # type: ignore[no-untyped-call]
            _MetricsServicer(self._store), server
        )
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            bound: int = server.add_insecure_port(address)
        except RuntimeError as exc:
            raise ConfigError(f"cannot bind the OTLP/gRPC receiver to {address}: {exc}") from exc
        if bound == 0:
            raise ConfigError(f"cannot bind the OTLP/gRPC receiver to {address}")
        await server.start()
        self._server = server
        self.port = bound
        return bound

    async def stop(self, grace: float = 0.5) -> None:
        """Stop serving, letting in-flight exports finish for up to ``grace`` seconds."""
        server, self._server = self._server, None
        if server is not None:
            await server.stop(grace)
            await server.wait_for_termination(timeout=grace + 1)
