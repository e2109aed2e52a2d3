"""The OTLP side of otel-replay.

``codec`` converts OTLP protobuf messages to and from the OTLP JSON encoding the
OpenTelemetry Collector's file exporter writes, and reads trace files; ``http`` and ``grpc``
are the two receivers, which only move bytes to the codec and the trace store.
"""

from __future__ import annotations
