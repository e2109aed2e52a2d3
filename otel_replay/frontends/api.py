"""The Python API: ``record`` and ``replay`` as context managers.

::

    with otel_replay.replay("cassettes/weather.json"):
        run_agent()          # official SDKs and OTel exporters now talk to the gateway

Each block starts the gateway on an event loop thread of its own, points ``os.environ`` at
it (the variables of the CLI contract), runs the block, and restores the environment
exactly — variables that did not exist before are removed again. A miss raises
:class:`~otel_replay.core.errors.ReplayMiss` when the block ends, even if the agent caught the
error the gateway answered it with.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from otel_replay.core.envvars import OTEL_REPLAY_UPDATE_SNAPSHOTS as UPDATE_SNAPSHOTS
from otel_replay.core.errors import ConfigError
from otel_replay.frontends.outcome import raise_for_misses as raise_for_misses
from otel_replay.session.session import MODES, Session, Summary, default_mode
from otel_replay.session.tools import SETTINGS as TOOLS

if TYPE_CHECKING:
    from otel_replay.frontends.telemetry import Flushed, Telemetry
    from otel_replay.frontends.transport import AsyncReplayTransport, ReplayTransport
    from otel_replay.otlp.received import LogRecord, MetricPoint, SpanList
    from otel_replay.session.fork import ForkPlan

__all__ = [
    "GatewayHandle",
    "fork_plan",
    "patched_environ",
    "raise_for_misses",
    "record",
    "replay",
]

PathLike = str | os.PathLike[str]
Door = TypeVar("Door", "ReplayTransport", "AsyncReplayTransport")


@dataclass(slots=True)
class GatewayHandle:
    """What a ``record`` / ``replay`` block yields.

    ``env`` holds the variables set for the block (empty in mode ``off``), ``url`` the
    gateway's base URL (``""`` in mode ``off``); ``summary`` is set when the block ends.
    ``spans``, ``logs`` and ``metrics`` are the agent's telemetry received during the block
    (and later in the block's traces), flushed when the block ends; ``flush()`` waits for
    it inside the block. ``fork_to`` is where a fork of the cassette is written.
    """

    mode: str
    cassette: Path | None
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    summary: Summary | None = None
    telemetry: Telemetry | None = None
    fork_to: Path | None = None  # a fork (``fork=(N, model)``): the cassette it writes
    session: Session | None = field(default=None, repr=False)  # the block's run, for its doors
    upstreams: dict[str, str] = field(default_factory=dict, repr=False)
    timing: str = "fast"
    _doors: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def transport(self) -> ReplayTransport:
        """An ``httpx2`` / ``httpx`` transport answering in this process from the block's
        run (its cassette, mode, matching, summary), without the gateway's socket:
        ``httpx2.Client(transport=run.transport)``."""
        from otel_replay.frontends.transport import ReplayTransport

        return self._door("sync", ReplayTransport)

    @property
    def async_transport(self) -> AsyncReplayTransport:
        """:attr:`transport` for ``httpx2.AsyncClient`` / ``httpx.AsyncClient``."""
        from otel_replay.frontends.transport import AsyncReplayTransport

        return self._door("async", AsyncReplayTransport)

    def _door(self, kind: str, make: type[Door]) -> Door:
        door = self._doors.get(kind)
        if door is None:
            if self.session is None:
                raise ConfigError("no transport: the block ran in mode off, so nothing replays")
            door = make._joining(self.session, self.upstreams, self.timing, self.url)
            self._doors[kind] = door
        assert isinstance(door, make)
        return door

    def _telemetry(self) -> Telemetry:
        if self.telemetry is None:
            raise ConfigError("no telemetry: the block ran in mode off, so nothing received it")
        return self.telemetry

    @property
    def spans(self) -> SpanList:
        return self._telemetry().spans

    @property
    def logs(self) -> list[LogRecord]:
        return self._telemetry().logs

    @property
    def metrics(self) -> list[MetricPoint]:
        return self._telemetry().metrics

    def flush(self, *providers: Any, timeout: float | None = None) -> Flushed:
        """Wait, within ``timeout`` seconds, for this process's OpenTelemetry providers (and
        ``providers``) to export; returns what it waited for and what the block holds."""
        return self._telemetry().flush(*providers, timeout=timeout)

    def assert_snapshot(self, *, ignore: Sequence[str] = ()) -> Path:
        """After the block: the span tree against its snapshot beside the cassette
        (``NAME.spans.json``), written when recording; attributes matching ``ignore``
        (shell patterns) do not count. A difference raises ``SnapshotMismatch``."""
        assert self.cassette is not None
        return self._telemetry().assert_snapshot(self.cassette, self.mode, ignore)


@contextmanager
def patched_environ(env: Mapping[str, str]) -> Iterator[None]:
    """Set ``env`` in ``os.environ`` for the block, then restore every variable exactly:
    the previous value, or absent when it did not exist."""
    previous = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _path(value: PathLike | None) -> Path | None:
    return None if value is None else Path(value)


def _upstreams(
    openai: str | None,
    anthropic: str | None,
    azure: str | None,
    more: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The upstream base URLs named by keyword, by their names in ``PROVIDERS``, and the
    ``upstreams`` mapping: more upstreams by name (``{"groq": URL}``, ``{"bedrock": URL}``)."""
    from otel_replay.providers.named import parse_upstreams

    named = {"openai": openai, "anthropic": anthropic, "azure": azure}
    try:
        extra = parse_upstreams(f"{name}={url}" for name, url in (more or {}).items())
    except ValueError as exc:
        raise ConfigError(str(exc).replace("--upstream", "upstreams:")) from None
    return {**{name: url for name, url in named.items() if url}, **extra}


def _mcp_servers(servers: Mapping[str, str] | None) -> dict[str, str]:
    """MCP servers by name, checked as ``--mcp NAME=URL`` is."""
    from otel_replay.providers.mcp import parse_server

    try:
        return dict(parse_server(f"{name}={url}") for name, url in (servers or {}).items())
    except ValueError as exc:
        raise ConfigError(f"mcp: {exc}") from None


@contextmanager
def _run(
    *,
    mode: str,
    cassette: PathLike,
    traces: PathLike | None,
    timing: str,
    report: PathLike | None,
    upstreams: dict[str, str],
    rules: PathLike | None = None,
    fork: ForkPlan | None = None,
    mcp: Mapping[str, str] | None = None,
    tools: str = "replay",
) -> Iterator[GatewayHandle]:
    if mode not in MODES:
        raise ConfigError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
    if tools not in TOOLS:
        raise ConfigError(f"unknown tools setting {tools!r}; use replay or live")
    if timing not in ("fast", "recorded"):
        raise ConfigError(f"unknown timing {timing!r}; use fast or recorded")
    handle = GatewayHandle(mode=mode, cassette=Path(cassette))
    handle.fork_to = None if fork is None else fork.target
    if mode == "off":
        yield handle
        handle.summary = Summary(mode="off", cassette=str(cassette))
        return
    from otel_replay.frontends.rulefiles import rule_sources
    from otel_replay.frontends.telemetry import Telemetry, shared_received
    from otel_replay.gateway.runner import GatewayConfig, GatewayThread, upstream_bases
    from otel_replay.otlp.received import Received

    config = GatewayConfig(
        mode=mode,
        cassette=Path(cassette),
        traces=_path(traces),
        upstreams=upstreams,
        timing=timing,
        report=_path(report),
        environ=dict(os.environ),
        rules=rule_sources(Path(cassette), rules),
        fork=fork,
        mcp=_mcp_servers(mcp),
        tools=tools,
    )
    if tools == "replay":
        from otel_replay.hooks.install import install

        install()  # the frameworks' tool seams ask the gateway while a run is on
    gateway = GatewayThread(config).start()
    assert gateway.server is not None
    handle.env = dict(gateway.env)
    handle.url = gateway.server.url
    handle.session, handle.timing = gateway.session, timing
    handle.upstreams = upstream_bases(config, os.environ)  # the transports' live calls go there
    received = shared_received() or Received()
    gateway.session.store.observers.append(received.tap)
    update = os.environ.get(UPDATE_SNAPSHOTS, "") not in ("", "0", "false", "no")
    handle.telemetry = telemetry = Telemetry(received, gateway.session, update=update)
    try:
        with patched_environ(handle.env):
            yield handle
            telemetry.close()  # the agent's exporters deliver to this block's gateway
    except BaseException as exc:
        telemetry.window.close()
        handle.summary = gateway.stop()
        if isinstance(exc, Exception):
            # the agent's error is most likely the miss answered to it: name the cause
            raise_for_misses(handle.summary, cause=exc)
        raise
    handle.summary = gateway.stop()
    raise_for_misses(handle.summary)


@contextmanager
def record(
    cassette: PathLike,
    *,
    traces: PathLike | None = None,
    upstream_openai: str | None = None,
    upstream_anthropic: str | None = None,
    upstream_azure: str | None = None,
    upstreams: Mapping[str, str] | None = None,
    rules: PathLike | None = None,
    mcp: Mapping[str, str] | None = None,
    tools: str = "replay",
) -> Iterator[GatewayHandle]:
    """Record the block's model calls into ``cassette`` (written anew when the block ends).

    Every call is forwarded to the upstream — ``upstream_openai`` / ``upstream_anthropic``,
    else the caller's own ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``, else the public
    endpoints; Azure OpenAI calls go to ``upstream_azure``, else the caller's
    ``AZURE_OPENAI_ENDPOINT``. ``upstreams`` names more upstreams: an OpenAI-compatible
    host by a name of yours (``{"groq": URL}``: the agent gets ``GROQ_BASE_URL``, the
    gateway's ``/u/groq/v1``), or ``"bedrock"`` for AWS Bedrock Runtime. ``traces`` keeps
    the recording's OTLP JSON lines (the agent's own spans and the model-call spans); the
    cassette is derived from them.
    ``rules`` is a rule file above the one found (``otel-replay.toml`` in the current
    directory or beside the cassette); the cassette records the rules in force.
    ``mcp`` names MCP servers (``{"weather": URL}``, Streamable HTTP): the agent reaches
    each at ``OTEL_REPLAY_MCP_<NAME>_URL`` and its tool calls are recorded too.
    ``tools``: the agent's own tools (its framework's, ``@otel_replay.tool``) are recorded
    (``"replay"``, the default) or run untouched (``"live"``).
    """
    with _run(
        mode="record",
        cassette=cassette,
        traces=traces,
        timing="fast",
        report=None,
        upstreams=_upstreams(upstream_openai, upstream_anthropic, upstream_azure, upstreams),
        rules=rules,
        mcp=mcp,
        tools=tools,
    ) as handle:
        yield handle


@contextmanager
def replay(
    cassette: PathLike,
    *,
    mode: str | None = None,
    traces: PathLike | None = None,
    timing: str = "fast",
    report: PathLike | None = None,
    upstream_openai: str | None = None,
    upstream_anthropic: str | None = None,
    upstream_azure: str | None = None,
    upstreams: Mapping[str, str] | None = None,
    rules: PathLike | None = None,
    fork: tuple[int | str, str | None] | None = None,
    fork_to: PathLike | None = None,
    mcp: Mapping[str, str] | None = None,
    tools: str = "replay",
) -> Iterator[GatewayHandle]:
    """Answer the block's model calls (and tool calls) from ``cassette``.

    ``mode``: ``strict`` (a miss fails), ``auto`` (a miss carrying the caller's own key is
    forwarded live and appended), ``record`` or ``off``; default ``strict`` when ``CI`` is
    set, else ``auto``. ``timing="recorded"`` replays streams at their recorded pace.
    ``report`` writes the run's JSON summary. When the block ends a miss raises
    :class:`~otel_replay.core.errors.ReplayMiss` with the first miss's message.
    ``rules``: a rule file above the one found and the rules recorded in the cassette.
    ``upstreams``: as for :func:`record`; the agent gets ``NAME_BASE_URL`` for every named
    upstream the cassette recorded anyway.
    ``fork=(N, MODEL)`` forks the recorded run: the model calls before the N-th (1-based;
    or ``"tool:NAME"``, ``"text:TEXT"``) replay strictly, the rest go live (with the
    caller's own key), sent with ``MODEL`` unless it is None; the whole run is written to
    ``fork_to`` (default: beside the cassette, ``NAME.fork-N-MODEL.json``; the block's
    ``fork_to``), the cassette itself untouched. ``mode`` is then ``strict`` or unset.
    ``mcp``: as for :func:`record` (the servers the cassette recorded are served anyway;
    a URL serves ``live`` rules and ``auto`` mode).
    ``tools``: the agent's own tools are answered from the cassette and do not run
    (``"replay"``, the default, when the cassette recorded them) or run (``"live"``).
    """
    plan = fork_plan(cassette, fork, fork_to, mode)
    with _run(
        mode="strict" if plan is not None else mode or default_mode(),
        cassette=cassette,
        traces=traces,
        timing=timing,
        report=report,
        upstreams=_upstreams(upstream_openai, upstream_anthropic, upstream_azure, upstreams),
        rules=rules,
        fork=plan,
        mcp=mcp,
        tools=tools,
    ) as handle:
        yield handle


def fork_plan(
    cassette: PathLike,
    fork: tuple[int | str, str | None] | None,
    fork_to: PathLike | None,
    mode: str | None = None,
) -> ForkPlan | None:
    """The plan of ``fork=(N, MODEL)`` on ``cassette`` (None: no fork); a ConfigError
    for one that cannot be."""
    from otel_replay.session.fork import ForkPlan, fork_target
    from otel_replay.session.fork_points import parse_live_from

    if fork is None:
        if fork_to is not None:
            raise ConfigError("fork_to goes with fork=(N, MODEL)")
        return None
    if mode not in (None, "strict"):
        raise ConfigError(
            f"a fork replays strictly up to its point; it does not run in mode {mode}"
        )
    try:
        point, model = fork
    except (TypeError, ValueError):
        raise ConfigError(f"fork takes (N, MODEL), not {fork!r}") from None
    live_from = point if isinstance(point, int) else parse_live_from(str(point))
    target = Path(fork_to) if fork_to is not None else fork_target(Path(cassette), live_from, model)
    return ForkPlan(live_from, target, model)
