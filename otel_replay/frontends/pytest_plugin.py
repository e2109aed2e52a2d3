"""The pytest plugin: the ``otel_replay`` fixture, options, marker and terminal summary.

::

    def test_weather(otel_replay):
        with otel_replay("weather"):        # tests/cassettes/weather.json
            assert "Lisbon" in run_agent()

One gateway runs in-process for the whole pytest session (one per pytest-xdist worker),
started (and OTLP pointed at it) before test modules are imported (``pytest_telemetry.py``);
each block points it at its own cassette and mode (a fresh :class:`Session`) and sets the
agent environment in ``os.environ`` for the block, so agents in this process, threads and
subprocesses reach it; ``run.spans`` is what it received meanwhile. Cassettes belong to the
whole run, across workers (see ``suite``). A miss fails the test whatever the agent did
with the error — and a miss is never an expected failure, ``xfail`` does not hide it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Generator
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from otel_replay.core.errors import CassetteError, ConfigError, EgressBlocked, ReplayMiss
from otel_replay.frontends import pytest_telemetry
from otel_replay.frontends.api import GatewayHandle, fork_plan, patched_environ
from otel_replay.frontends.pytest_telemetry import (  # noqa: F401  (a hook and a fixture)
    otel_replay_telemetry,
    pytest_load_initial_conftests,
)
from otel_replay.frontends.rulefiles import rule_sources
from otel_replay.frontends.suite import (
    BlockResult,
    OtelReplayUnusedWarning,
    Outcome,
    SuiteRun,
    fail_run,
)
from otel_replay.frontends.telemetry import TelemetryGateway
from otel_replay.providers import PROVIDERS
from otel_replay.providers.named import parse_upstream
from otel_replay.reports.formats import write_suite
from otel_replay.reports.run import combined
from otel_replay.session.session import MODES, Session, Summary, default_mode

__all__ = ["OtelReplayUnusedWarning"]

_PLUGIN = pytest.StashKey["OtelReplayPlugin"]()
_FAILURES = pytest.StashKey[list[str]]()
_SESSION = pytest.StashKey[pytest.Session]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("otel-replay", "otel-replay: record and replay model calls")
    group.addoption(
        "--otel-replay",
        dest="otel_replay_mode",
        choices=MODES,
        default=None,
        help="mode for every block, overriding markers (default: strict when CI is set, else auto)",
    )
    group.addoption(
        "--otel-replay-egress",
        dest="otel_replay_egress",
        choices=("block", "allow"),
        default="allow",
        help="block: connections to model provider hosts fail the test",
    )
    group.addoption(
        "--otel-replay-unused",
        dest="otel_replay_unused",
        choices=("warn", "error"),
        default="warn",
        help="what a recording no test of the run used is (default: warn)",
    )
    group.addoption(
        "--otel-replay-report",
        dest="otel_replay_report",
        metavar="FILE",
        default=None,
        help="write a report of every block and every cassette written "
        "(.json, .html or .md by extension)",
    )
    pytest_telemetry.add_options(group)
    for row in PROVIDERS:
        if row.option_help is not None:
            group.addoption(
                f"--otel-replay-upstream-{row.name}",
                dest=f"otel_replay_{row.name}",
                metavar="URL",
                help=row.option_help,
            )
    group.addoption(
        "--otel-replay-upstream",
        action="append",
        default=[],
        type=parse_upstream,
        metavar="NAME=URL",
        help="an OpenAI-compatible upstream, at /u/NAME/v1 (NAME_BASE_URL); repeatable",
    )
    parser.addini(
        "otel_replay_cassette_dir",
        "folder beside the test file where bare cassette names live",
        default="cassettes",
    )


def pytest_configure(config: pytest.Config) -> None:
    pytest_telemetry.redirect(config, config.option)
    config.addinivalue_line(
        "markers",
        "otel_replay(mode=None, cassette=None): per-test defaults for the otel_replay fixture",
    )
    plugin = OtelReplayPlugin(config)
    config.stash[_PLUGIN] = plugin
    config.pluginmanager.register(plugin, "otel_replay_state")
    config.pluginmanager.register(plugin.suite, "otel_replay_suite")


@pytest.fixture
def otel_replay(request: pytest.FixtureRequest) -> Callable[..., ReplayBlock]:
    """``otel_replay(name=None, *, mode=None, fork=None, fork_to=None)`` returns a context
    manager (``with`` or ``async with``) that replays or records the block's model calls.
    A bare name means ``<test dir>/cassettes/NAME.json``; a path is used as given; no name
    means the marker's ``cassette=`` or the test's name. ``fork=(N, MODEL)`` forks the
    recorded run as the Python API's ``replay`` does (whatever the mode options say). The
    block yields a :class:`GatewayHandle` (``.spans``, ``.fork_to``)."""
    plugin = request.config.stash[_PLUGIN]
    item = request.node

    def open_block(
        name: str | os.PathLike[str] | None = None,
        *,
        mode: str | None = None,
        fork: tuple[int | str, str | None] | None = None,
        fork_to: str | os.PathLike[str] | None = None,
    ) -> ReplayBlock:
        cassette = plugin.cassette_for(item, name)
        plan = fork_plan(cassette, fork, fork_to, mode)
        chosen = "strict" if plan is not None else plugin.mode_for(item, mode)
        return ReplayBlock(plugin, item, cassette, chosen, plan)

    return open_block


def add_failure(item: pytest.Item, message: str) -> None:
    """Fail ``item`` with ``message`` at its next report, whatever its outcome (xfail too)."""
    item.stash.setdefault(_FAILURES, []).append(message)


class SharedGateway:
    """The session's one gateway, re-pointed at each block's :class:`Session`."""

    def __init__(self, telemetry: TelemetryGateway | None = None) -> None:
        self.telemetry = telemetry or TelemetryGateway(redirect=False)
        self.thread = self.telemetry.thread
        assert self.thread.server is not None
        self.server = self.thread.server
        self.idle = self.server.session

    def begin(self, session: Session, upstreams: dict[str, str]) -> dict[str, str]:
        """Point the gateway at ``session``; returns the agent environment for the block."""
        from otel_replay.gateway.runner import agent_environment, agent_upstreams

        upstream = self.server.gateway.upstream
        if hasattr(upstream, "bases") and session.records:
            upstream.bases = dict(upstreams)
        session.store.observers.append(self.telemetry.received.tap)
        self.thread.use_session(session)
        named = agent_upstreams(upstreams, session)
        return agent_environment(self.url, self.server.grpc_port, session.mode, os.environ, named)

    def end(self) -> Summary:
        """Point the gateway back at its idle session; finish and summarise the block's."""
        return self.thread.use_session(self.idle).finish()

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        self.telemetry.stop()


class ReplayBlock:
    """One ``with otel_replay(...)`` block."""

    def __init__(
        self, plugin: OtelReplayPlugin, item: Any, cassette: Path, mode: str, fork: Any = None
    ) -> None:
        self.plugin = plugin
        self.item = item
        self.cassette = cassette
        self.mode = mode
        self.fork = fork  # a ForkPlan, or None
        self.handle = GatewayHandle(mode=mode, cassette=cassette)
        self.handle.fork_to = None if fork is None else fork.target
        self.loaded = 0  # recordings in the cassette when the block began
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
            add_failure(self.item, self.plugin.miss_message(first, self.cassette))
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


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "cassette"


class OtelReplayPlugin:
    """Per-pytest-session state: options, the shared gateway, block results."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.forced_mode: str | None = config.getoption("otel_replay_mode")
        self.unused: str = config.getoption("otel_replay_unused")
        self.report: str | None = config.getoption("otel_replay_report")
        self.upstreams: dict[str, str | None] = {
            row.name: config.getoption(f"otel_replay_{row.name}")
            for row in PROVIDERS
            if row.option_help is not None
        }
        self.upstreams.update(config.getoption("otel_replay_upstream"))
        self.cassette_dir = str(config.getini("otel_replay_cassette_dir") or "cassettes")
        early = pytest_telemetry.early_gateway(config)
        self.gateway: SharedGateway | None = None if early is None else SharedGateway(early)
        self.results: list[BlockResult] = []
        self.blocked: list[str] = []
        self.suite = SuiteRun(config)  # the run's cassettes, across pytest-xdist workers
        self.outcome: Outcome | None = None
        self._active: ReplayBlock | None = None
        self._item: pytest.Item | None = None
        self.egress = config.getoption("otel_replay_egress") == "block"
        if self.egress:
            from otel_replay.frontends.egress import block_egress

            block_egress(on_block=self._on_egress_blocked)

    # -- resolving a block ----------------------------------------------------------------
    def cassette_for(self, item: Any, name: str | os.PathLike[str] | None) -> Path:
        marker = item.get_closest_marker("otel_replay")
        if name is None and marker is not None:
            name = marker.kwargs.get("cassette")
        if name is None:
            name = _safe_name(item.name)
        text = os.fspath(name)
        if text.endswith(".json") or os.path.isabs(text):
            return Path(text)  # a path is used as given
        # a name lives in the cassette folder beside the test file, and stays there
        folder = (Path(item.path).parent / self.cassette_dir).resolve()
        path = (folder / f"{text}.json").resolve()
        if not path.is_relative_to(folder):
            raise ConfigError(
                f"cassette name {text!r} escapes the cassette folder {folder}; "
                "use a name inside it, or a path ending in .json"
            )
        return path

    def mode_for(self, item: Any, mode: str | None) -> str:
        marker = item.get_closest_marker("otel_replay")
        chosen = (
            self.forced_mode
            or mode
            or (marker.kwargs.get("mode") if marker is not None else None)
            or default_mode()
        )
        if chosen not in MODES:
            raise ConfigError(f"unknown otel-replay mode {chosen!r}; use one of {', '.join(MODES)}")
        return str(chosen)

    def miss_message(self, miss: str, cassette: Path) -> str:
        return f"{miss}\n(cassette {cassette}; explain: otel-replay why --cassette {cassette})"

    # -- running a block ------------------------------------------------------------------
    def begin(self, block: ReplayBlock) -> tuple[dict[str, str], str]:
        if self._active is not None:
            raise ConfigError("otel_replay blocks cannot be nested")
        try:
            rules = rule_sources(block.cassette)  # otel-replay.toml: cwd, beside the cassette
            named = [name for name, url in self.upstreams.items() if url]
            fork = block.fork and block.fork.given_to(named, os.environ)
            session = Session(
                mode=block.mode, cassette=block.cassette, rules=rules, suite=self.suite, fork=fork
            )
        except CassetteError as exc:
            problem = str(exc)
            if not block.cassette.exists():
                problem = f"{block.cassette}: no such cassette; record it with --otel-replay=record"
        except ConfigError as exc:  # a bad rule file: one line naming file, line and rule
            problem = str(exc)
        else:
            problem = ""
        if problem:
            pytest.fail(f"otel-replay: {problem}", pytrace=False)
        if self.gateway is None:
            self.gateway = SharedGateway()
        from otel_replay.gateway.runner import GatewayConfig, upstream_bases

        bases = upstream_bases(GatewayConfig(mode=block.mode, upstreams=self.upstreams), os.environ)
        block.handle.telemetry = pytest_telemetry.opened(self.config, self.gateway, session)
        env = self.gateway.begin(session, bases)
        self._active = block
        block.loaded = len(session.cassette.interactions)
        return env, self.gateway.url

    def end(self, block: ReplayBlock, clean: bool) -> Summary:
        assert self.gateway is not None and block.handle.telemetry is not None
        self._active = None
        block.handle.telemetry.close()  # the agent's exporters deliver into the block
        summary = self.gateway.end()
        clean = clean and not summary.misses
        mode = "fork" if block.fork is not None else block.mode  # a fork uses a prefix only
        self.results.append(
            BlockResult(block.item.nodeid, str(block.cassette), mode, summary, block.loaded, clean)
        )
        return summary

    def _on_egress_blocked(self, error: EgressBlocked) -> None:
        self.blocked.append(str(error))
        if self._item is not None:
            add_failure(self._item, str(error))

    # -- hooks ----------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        self._item = item
        try:
            return (yield)
        finally:
            self._item = None

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        failures = item.stash.get(_FAILURES, [])
        if failures:
            report.outcome = "failed"
            report.longrepr = "\n".join(failures)
            if hasattr(report, "wasxfail"):
                del report.wasxfail
            failures.clear()
        return report

    def totals(self) -> Summary:
        return combined((r.summary for r in self.results), self.forced_mode or "mixed")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.outcome = outcome = self.suite.finish(session, self.results, self.blocked)
        if outcome is None:  # a pytest-xdist worker: the controller reports the run
            return
        self.config.stash[_SESSION] = session
        if outcome.errors or (outcome.unused and self.unused == "error"):
            fail_run(session)
        if self.report is not None:
            totals, extra = self.totals(), outcome.to_json()
            write_suite(Path(self.report), totals, self.results, self.blocked, extra)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        outcome = self.outcome
        if outcome is None or not (self.results or self.blocked or outcome.changes):
            return
        write = terminalreporter.write_line
        terminalreporter.section("otel-replay")
        write(self.totals().line() + f" · {len(self.results)} blocks")
        for result in self.results:
            for miss in result.summary.misses:
                write(f"{result.nodeid}: {miss}")
        outcome.write(terminalreporter, self.unused, self.config.stash[_SESSION])
        for message in self.blocked:
            write(f"egress blocked: {message}")

    def pytest_unconfigure(self) -> None:
        self.suite.cleanup()
        if self.gateway is not None:
            self.gateway.stop()
            self.gateway = None
        if self.egress:
            from otel_replay.frontends.egress import allow_egress

            allow_egress()
