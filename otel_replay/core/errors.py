"""The error tree. Every error otel-replay raises on purpose derives from OtelReplayError.

Messages are built here, in ``__init__``, so every raise site reads the same way and a
user sees one actionable line.
"""

from __future__ import annotations


class OtelReplayError(Exception):
    """Base of every error otel-replay raises on purpose."""


class ConfigError(OtelReplayError):
    """A command-line option, environment variable or argument is unusable."""


class CassetteError(OtelReplayError):
    """A cassette cannot be read or written; names the file and the place."""

    def __init__(self, path: object, where: str, problem: str) -> None:
        self.path = str(path)
        self.where = where
        self.problem = problem
        place = f" at {where}" if where else ""
        super().__init__(f"{self.path}{place}: {problem}")


class CassetteVersionError(CassetteError):
    """The cassette was written by a newer otel-replay."""

    def __init__(self, path: object, version: object, supported: int) -> None:
        super().__init__(
            path,
            "version",
            f"cassette format version {version!r} is newer than this otel-replay supports "
            f"(up to {supported}); upgrade otel-replay",
        )


class TraceFormatError(OtelReplayError):
    """A trace file or OTLP payload cannot be decoded."""

    def __init__(self, source: object, problem: str) -> None:
        self.source = str(source)
        self.problem = problem
        super().__init__(f"{self.source}: {problem}")


class ReplayMiss(OtelReplayError):
    """A request matched no unused recording.

    ``str(miss)`` is the contract line, e.g.
    ``replay miss: system prompt changed (hash a1b2c3d→e4f5a6b)``.
    """

    def __init__(self, reason: str, *, component: str | None = None) -> None:
        self.reason = reason
        self.component = component
        super().__init__(f"replay miss: {reason}")


class UpstreamError(OtelReplayError):
    """The upstream provider could not be reached or misbehaved at the transport level."""

    def __init__(self, upstream: str, kind: str, detail: str = "") -> None:
        self.upstream = upstream
        self.kind = kind
        suffix = f": {detail}" if detail else ""
        super().__init__(f"upstream {upstream} {kind}{suffix}")


class SourceError(OtelReplayError):
    """A tracing backend (``build --from``) could not be read: unreachable, credentials
    refused, no such trace, or an answer that is not what its API documents. ``source``
    names the backend and its address (never its credentials)."""

    def __init__(self, source: str, problem: str) -> None:
        self.source = source
        self.problem = problem
        super().__init__(f"{source}: {problem}")


class EgressBlocked(OtelReplayError, ConnectionError):
    """A connection to a model provider was attempted while egress is blocked."""

    def __init__(self, host: str) -> None:
        self.host = host
        super().__init__(
            f"otel-replay blocked a connection to model provider host {host!r} "
            "(--otel-replay-egress=block); record a cassette or route the client "
            "through the otel-replay gateway"
        )


def root_cause(exc: BaseException) -> str:
    """The innermost cause's message: what went wrong under a library's wrappers (an
    aiohttp payload error around a zlib error), or its type when it says nothing."""
    seen = {id(exc)}
    while True:
        inner = exc.__cause__
        if inner is None and not exc.__suppress_context__:
            inner = exc.__context__
        if inner is None or id(inner) in seen:
            return str(exc) or type(exc).__name__
        seen.add(id(inner))
        exc = inner


class SnapshotMismatch(OtelReplayError, AssertionError):
    """The agent's span tree differs from its trace snapshot (or has none to compare with);
    the message is the tree diff and how to accept the change."""

    def __init__(self, path: object, diff: str) -> None:
        self.path = str(path)
        self.diff = diff
        super().__init__(
            f"trace snapshot {self.path} differs from this run's spans:\n{diff}\n"
            "(an intended change: rewrite it with --otel-replay-update-snapshots, or "
            "OTEL_REPLAY_UPDATE_SNAPSHOTS=1 outside pytest)"
        )
