"""The agent's own telemetry, as a test reads it: ``run.spans``, ``run.logs``, ``run.metrics``.

A block's :class:`Telemetry` is a window on what the gateway received (see
``otlp/received.py``). Before the window opens and before it closes it flushes this
process's OpenTelemetry providers (``force_flush`` on the global tracer, meter and logger
providers, within a bounded time), so a test reads what the agent exported without
sleeping, and telemetry buffered before the block does not land in it.

:func:`redirect_telemetry` is the same redirection the pytest plugin makes before test
modules are imported, for programs outside pytest: called before the agent builds its
exporters, it points the OTLP variables at a gateway of its own, and later ``record`` /
``replay`` blocks read what arrives there too.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otel_replay.core.errors import ConfigError
from otel_replay.otlp.received import LogRecord, MetricPoint, Received, SpanList, Window

if TYPE_CHECKING:
    from otel_replay.session.session import Session

__all__ = ["Flushed", "Telemetry", "TelemetryGateway", "otlp_environment", "redirect_telemetry"]

log = logging.getLogger("otel_replay")

FLUSH_TIMEOUT = 5.0
"""Seconds a block waits, at most, for the in-process providers to export."""

_PROVIDERS = (
    ("tracer provider", "opentelemetry.trace", "get_tracer_provider"),
    ("meter provider", "opentelemetry.metrics", "get_meter_provider"),
    ("logger provider", "opentelemetry._logs", "get_logger_provider"),
)


@dataclass(slots=True)
class Flushed:
    """What a flush waited for: the providers that exported everything they held, those
    that did not within the time allowed, and what the block holds now."""

    flushed: list[str] = field(default_factory=list)
    timed_out: list[str] = field(default_factory=list)
    spans: int = 0
    logs: int = 0
    metric_points: int = 0

    def __str__(self) -> str:
        waited = ", ".join(self.flushed) or "no in-process provider (nothing to wait for)"
        late = f"; not flushed in time: {', '.join(self.timed_out)}" if self.timed_out else ""
        return (
            f"flushed {waited}{late}; the block holds {self.spans} spans, "
            f"{self.logs} log records, {self.metric_points} metric points"
        )


def in_process_providers(extra: tuple[Any, ...] = ()) -> list[tuple[str, Any]]:
    """The global providers this process set (only those of modules it imported: reading
    them never imports OpenTelemetry), then ``extra``; those that can ``force_flush``."""
    found: list[tuple[str, Any]] = []
    for label, module_name, getter in _PROVIDERS:
        module = sys.modules.get(module_name)
        if module is not None:
            found.append((label, getattr(module, getter)()))
    found.extend((type(p).__name__, p) for p in extra)
    return [(label, p) for label, p in found if callable(getattr(p, "force_flush", None))]


def flush_providers(extra: tuple[Any, ...] = (), timeout: float = FLUSH_TIMEOUT) -> Flushed:
    """``force_flush`` every in-process provider (and ``extra``), sharing ``timeout``."""
    result = Flushed()
    deadline = time.monotonic() + timeout
    for label, provider in in_process_providers(extra):
        left = max(0, int((deadline - time.monotonic()) * 1000))
        try:
            done = provider.force_flush(timeout_millis=left)
        except Exception:  # the agent's provider: its fault is reported, never raised here
            log.exception("otel-replay: flushing the %s failed", label)
            done = False
        (result.flushed if done is not False else result.timed_out).append(label)
    if result.timed_out:
        log.warning(
            "otel-replay: %s did not export within %g s; what they held is not in the block",
            ", ".join(result.timed_out),
            timeout,
        )
    return result


class Telemetry:
    """What one block received; opened at the block's start, closed at its end.

    ``session`` (the block's) lends its matching rules and redactor to snapshots;
    ``update`` rewrites snapshots instead of comparing them.
    """

    def __init__(
        self,
        received: Received,
        session: Session | None = None,
        *,
        update: bool = False,
        timeout: float = FLUSH_TIMEOUT,
    ) -> None:
        self.session = session
        self.update = update
        self.timeout = timeout
        flush_providers(timeout=timeout)  # what was exported before the block is not its
        self.window: Window = received.window(received.mark())

    def close(self) -> Flushed:
        """Flush the agent's providers, then stop taking what arrives by time alone."""
        flushed = self.flush()
        self.window.close()
        return flushed

    def flush(self, *providers: Any, timeout: float | None = None) -> Flushed:
        """Wait (within ``timeout`` seconds) for this process's global providers and
        ``providers`` to export what they hold; says what it waited for."""
        flushed = flush_providers(providers, self.timeout if timeout is None else timeout)
        flushed.spans, flushed.logs = len(self.spans), len(self.logs)
        flushed.metric_points = len(self.metrics)
        return flushed

    def assert_snapshot(self, cassette: Path, mode: str, ignore: Sequence[str] = ()) -> Path:
        """Write the span tree's snapshot beside ``cassette`` (mode ``record``, ``update``,
        or ``auto`` without one yet), else compare it with the one there; a difference
        raises :class:`SnapshotMismatch` with the tree diff. Returns the snapshot's path."""
        from otel_replay.core.errors import SnapshotMismatch
        from otel_replay.matching.normalize import DEFAULT, Numbering
        from otel_replay.reports import snapshot as snap
        from otel_replay.reports import write_json

        if self.window.end is None:
            raise ConfigError("assert_snapshot() reads the whole block: call it after the block")
        normalizer = DEFAULT if self.session is None else self.session.normalizer
        numbering = Numbering()
        doc = snap.snapshot(self.spans, lambda v: normalizer.value(v, numbering), ignore)
        if self.session is not None:
            doc = self.session.redactor.json(doc)
        path = snap.snapshot_path(cassette)
        if self.update or mode == "record" or (mode == "auto" and not path.exists()):
            write_json(path, doc)
            return path
        if not path.exists():
            raise SnapshotMismatch(path, "(no snapshot: record the block to write one)")
        diff = snap.compare(snap.load_snapshot(path), doc, str(path))
        if diff is not None:
            raise SnapshotMismatch(path, diff)
        return path

    @property
    def spans(self) -> SpanList:
        return self.window.spans

    @property
    def logs(self) -> list[LogRecord]:
        return self.window.logs

    @property
    def metrics(self) -> list[MetricPoint]:
        return self.window.metrics


def otlp_environment(url: str, grpc_port: int | None, caller: Mapping[str, str]) -> dict[str, str]:
    """The OTLP variables (every signal, HTTP or gRPC as the caller's settings ask) that
    point exporters at the gateway at ``url``; nothing else of the agent environment."""
    from otel_replay.gateway.runner import agent_environment

    env = agent_environment(url, grpc_port, "off", caller)
    return {name: value for name, value in env.items() if name.startswith("OTEL_EXPORTER_OTLP_")}


class TelemetryGateway:
    """A gateway (mode ``off``) receiving the process's telemetry between blocks; with
    ``redirect``, the OTLP variables point at it from now until ``stop()``.

    ``until_exit``: ``stop()`` leaves it serving until the process exits. Providers set up
    after it export once more as the process exits (a metric reader always does): they
    find it there, where a stopped gateway would leave them retrying for seconds.
    """

    def __init__(self, *, redirect: bool = True, until_exit: bool = False) -> None:
        from otel_replay.gateway.runner import GatewayConfig, GatewayThread

        self.received = Received()
        self.thread = GatewayThread(GatewayConfig(mode="off", environ=dict(os.environ))).start()
        assert self.thread.server is not None
        self.thread.session.store.observers.append(self.received.tap)
        self.url = self.thread.server.url
        env = otlp_environment(self.url, self.thread.server.grpc_port, os.environ)
        self.env = env if redirect else {}
        self._previous = {name: os.environ.get(name) for name in self.env}
        os.environ.update(self.env)
        self.until_exit = until_exit
        if until_exit:  # registered before the providers' own handlers, so it runs after them
            atexit.register(self.thread.stop)
        _LIVE.add(self)

    @property
    def spans(self) -> SpanList:
        """Every span received since the redirection, in blocks or not."""
        return self.received.window().spans

    @property
    def logs(self) -> list[LogRecord]:
        return self.received.window().logs

    @property
    def metrics(self) -> list[MetricPoint]:
        return self.received.window().metrics

    def stop(self) -> None:
        """Flush the process's providers into the gateway, stop it (unless ``until_exit``),
        restore the variables."""
        global _ACTIVE
        flush_providers()
        if not self.until_exit:
            self.thread.stop()
        _LIVE.discard(self)
        for name, value in self._previous.items():
            if os.environ.get(name) != self.env[name]:
                continue  # changed since: not ours to restore
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if _ACTIVE is self:
            _ACTIVE = None

    def __enter__(self) -> TelemetryGateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


_ACTIVE: TelemetryGateway | None = None
_LIVE: set[TelemetryGateway] = set()


def redirected_elsewhere() -> bool:
    """Whether a redirection is in force in this process already (an outer session's)."""
    return any(gateway.env for gateway in _LIVE)


def redirect_telemetry() -> TelemetryGateway:
    """Point this process's OTLP variables at a gateway now, before the agent builds its
    exporters; ``record`` / ``replay`` blocks then read what arrives there during them
    (``run.spans``). Idempotent; ``stop()`` (or ``with``) ends it."""
    global _ACTIVE
    if _ACTIVE is None:
        _ACTIVE = TelemetryGateway(redirect=True)
    return _ACTIVE


def shared_received() -> Received | None:
    """The ``Received`` of the redirection in force, if any."""
    return None if _ACTIVE is None else _ACTIVE.received
