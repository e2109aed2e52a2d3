"""One ``with otel_replay(...)`` block of a test (:class:`ReplayBlock`), the gateway every
block of a pytest session shares (:class:`SharedGateway`), and the failures a block leaves
on its test, reported whatever the test's outcome (``xfail`` too)."""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import pytest

from otel_replay.core.errors import ReplayMiss
from otel_replay.frontends import pytest_telemetry
from otel_replay.frontends.api import GatewayHandle, patched_environ
from otel_replay.frontends.telemetry import TelemetryGateway
from otel_replay.session.session import Session, Summary

__all__ = ["BlockHost", "ReplayBlock", "SharedGateway", "add_failure", "take_failures"]

_FAILURES = pytest.StashKey[list[str]]()


def add_failure(item: pytest.Item, message: str) -> None:
    """Fail ``item`` with ``message`` at its next report, whatever its outcome (xfail too)."""
    item.stash.setdefault(_FAILURES, []).append(message)


def take_failures(item: pytest.Item) -> list[str]:
    """The messages ``add_failure`` left on ``item`` since its last report; none are left."""
    failures = item.stash.get(_FAILURES, [])
    taken = list(failures)
    failures.clear()
    return taken


class SharedGateway:
    """The session's one gateway, re-pointed at each block's :class:`Session`."""

    def __init__(self, telemetry: TelemetryGateway | None = None) -> None:
        self.telemetry = telemetry or TelemetryGateway(redirect=False)
        self.thread = self.telemetry.thread
        assert self.thread.server is not None
        self.server = self.thread.server
        self.idle = self.server.session

    def begin(
        self, session: Session, upstreams: dict[str, str], mcp: dict[str, str]
    ) -> dict[str, str]:
        """Point the gateway at ``session`` (and ``mcp``, the MCP servers by name); returns
        the agent environment for the block."""
        from otel_replay.gateway.environment import mcp_environment, tools_environment
        from otel_replay.gateway.runner import agent_environment, agent_upstreams

        upstream = self.server.gateway.upstream
        if hasattr(upstream, "bases") and session.records:
            upstream.bases = dict(upstreams)
        session.store.observers.append(self.telemetry.received.tap)
        self.thread.use_session(session)
        self.server.gateway.mcp_servers = dict(mcp)
        named = agent_upstreams(upstreams, session)
        env = agent_environment(self.url, self.server.grpc_port, session.mode, os.environ, named)
        env.update(mcp_environment(self.url, [*mcp, *session.tools.servers]))
        env.update(tools_environment(session.tools.setting, os.environ))
        return env

    def end(self) -> Summary:
        """Point the gateway back at its idle session; finish and summarise the block's."""
        return self.thread.use_session(self.idle).finish()

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        self.telemetry.stop()


class BlockHost(Protocol):
    """What a block asks of the pytest plugin that opened it (``pytest_plugin``'s
    ``OtelReplayPlugin``, named here so that this module needs nothing of the plugin's)."""

    config: pytest.Config

    def begin(self, block: ReplayBlock) -> tuple[dict[str, str], str]: ...

    def end(self, block: ReplayBlock, clean: bool) -> Summary: ...

    def not_evaluated(self, summary: Summary) -> bool: ...


class ReplayBlock:
    """One ``with otel_replay(...)`` block."""

    def __init__(
        self, plugin: BlockHost, item: Any, cassette: Path, mode: str, fork: Any = None
    ) -> None:
        self.plugin = plugin
        self.item = item
        self.cassette = cassette
        self.mode = mode
        self.fork = fork  # a ForkPlan, or None
        self.handle = GatewayHandle(mode=mode, cassette=cassette)
        self.handle.fork_to = None if fork is None else fork.target
        self.loaded = 0  # recordings in the cassette when the block began
        self.notice: str | None = None  # why its secrets miss (another placeholder key)
        self._env: Any = None

    def __enter__(self) -> GatewayHandle:
        if self.mode == "off":
            return self.handle
        env, self.handle.url = self.plugin.begin(self)
        self.handle.env = env
        self._env = patched_environ(env)
        self._env.__enter__()
        return self.handle

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.mode == "off":
            return
        self._env.__exit__(None, None, None)
        summary = self.handle.summary = self.plugin.end(self, clean=exc is None)
        for problem in pytest_telemetry.block_problems(self.plugin.config, self.handle.telemetry):
            add_failure(self.item, problem)
        if summary.misses:
            first = summary.misses[0]
            if self.plugin.not_evaluated(summary):  # no key to go live with: not a failure
                # reported at the test, as a skip marker's reason is
                raise pytest.skip.Exception(f"not evaluated: {first}", _use_item_location=True)
            add_failure(self.item, _miss_message(first, self.cassette, self.notice))
            raise ReplayMiss(first.removeprefix("replay miss: ")) from exc
        if self.fork is not None and summary.write_errors:  # the fork was not written
            add_failure(self.item, f"otel-replay: {summary.write_errors[0]}")
        if summary.failed and summary.bypassed:  # strict: calls the agent's spans show
            message = f"otel-replay: model calls bypassed the gateway: {summary.bypassed}"
            add_failure(self.item, message)
            pytest.fail(message, pytrace=False)

    async def __aenter__(self) -> GatewayHandle:
        return self.__enter__()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(kind, exc, tb)


def _miss_message(miss: str, cassette: Path, notice: str | None = None) -> str:
    said = f"{miss}\n(cassette {cassette}; explain: otel-replay why --cassette {cassette})"
    return said if notice is None else f"{said}\n{notice}"
