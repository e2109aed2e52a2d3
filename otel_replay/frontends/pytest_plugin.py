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
The options and what they decide for a block are in ``pytest_options.py``; a block and
the shared gateway in ``pytest_block.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from otel_replay.core.errors import CassetteError, ConfigError, EgressBlocked
from otel_replay.frontends import pytest_changed, pytest_telemetry
from otel_replay.frontends.api import fork_plan
from otel_replay.frontends.pytest_block import (
    ReplayBlock,
    SharedGateway,
    add_failure,
    take_failures,
)
from otel_replay.frontends.pytest_options import PluginOptions, add_options
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
from otel_replay.reports.formats import write_suite
from otel_replay.reports.run import combined
from otel_replay.session.session import Session, Summary

__all__ = ["OtelReplayUnusedWarning"]

_PLUGIN = pytest.StashKey["OtelReplayPlugin"]()
_SESSION = pytest.StashKey[pytest.Session]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    pytest_telemetry.redirect(config, config.option)
    config.addinivalue_line(
        "markers",
        "otel_replay(mode=None, cassette=None): per-test defaults for the otel_replay fixture",
    )
    plugin = OtelReplayPlugin(config)
    if plugin.options.tools == "replay":
        from otel_replay.hooks.install import install

        install()  # the frameworks' tool seams: inert outside a block
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
        cassette = plugin.options.cassette_for(item, name)
        plan = fork_plan(cassette, fork, fork_to, mode)
        chosen = "strict" if plan is not None else plugin.options.mode_for(item, mode)
        return ReplayBlock(plugin, item, cassette, chosen, plan)

    return open_block


class OtelReplayPlugin:
    """Per-pytest-session state: options, the shared gateway, block results."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = PluginOptions.read(config)
        early = pytest_telemetry.early_gateway(config)
        self.gateway: SharedGateway | None = None if early is None else SharedGateway(early)
        self.results: list[BlockResult] = []
        self.blocked: list[str] = []
        self.suite = SuiteRun(config)  # the run's cassettes, across pytest-xdist workers
        self.outcome: Outcome | None = None
        self._active: ReplayBlock | None = None
        self._item: pytest.Item | None = None
        if self.options.egress:
            from otel_replay.frontends.egress import block_egress

            block_egress(on_block=self._on_egress_blocked)

    # -- running a block ------------------------------------------------------------------
    def begin(self, block: ReplayBlock) -> tuple[dict[str, str], str]:
        if self._active is not None:
            raise ConfigError("otel_replay blocks cannot be nested")
        try:
            rules = rule_sources(block.cassette)  # otel-replay.toml: cwd, beside the cassette
            named = [name for name, url in self.options.upstreams.items() if url]
            fork = block.fork and block.fork.given_to(named, os.environ)
            session = Session(
                mode=block.mode,
                cassette=block.cassette,
                rules=rules,
                suite=self.suite,
                fork=fork,
                tools=self.options.tools,
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

        config = GatewayConfig(mode=block.mode, upstreams=self.options.upstreams)
        bases = upstream_bases(config, os.environ)
        block.handle.telemetry = pytest_telemetry.opened(self.config, self.gateway, session)
        env = self.gateway.begin(session, bases, self.options.mcp)
        self._active = block
        block.loaded = len(session.cassette.interactions)
        block.notice = session.key_notice
        block.handle.session, block.handle.upstreams = session, bases  # run.transport
        return env, self.gateway.url

    def end(self, block: ReplayBlock, clean: bool) -> Summary:
        assert self.gateway is not None and block.handle.telemetry is not None
        self._active = None
        block.handle.telemetry.close()  # the agent's exporters deliver into the block
        summary = self.gateway.end()
        clean = clean and not summary.misses
        mode = "fork" if block.fork is not None else block.mode  # a fork uses a prefix only
        evaluated = not self.not_evaluated(summary)
        self.results.append(
            BlockResult(
                block.item.nodeid,
                str(block.cassette),
                mode,
                summary,
                block.loaded,
                clean,
                evaluated,
            )
        )
        return summary

    def not_evaluated(self, summary: Summary) -> bool:
        """Whether a block's test is *not evaluated*: its auto-mode misses could not go
        live, no key of the provider being set (``--otel-replay-strict``: it fails)."""
        return summary.not_evaluated and not self.options.strict

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
        failures = take_failures(item)
        if failures:
            report.outcome = "failed"
            report.longrepr = "\n".join(failures)
            if hasattr(report, "wasxfail"):
                del report.wasxfail
        return report

    def totals(self) -> Summary:
        return combined((r.summary for r in self.results), self.options.forced_mode or "mixed")

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """``--otel-replay-changed``: only the tests whose cassettes changed, and those the
        map of tests to cassettes does not know (on each pytest-xdist worker alike)."""
        ref = self.options.changed
        if ref is None:
            return
        root = config.rootpath
        kept, deselected = pytest_changed.select(
            items, pytest_changed.load_map(root), pytest_changed.changed_cassettes(root, ref)
        )
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = kept

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.outcome = outcome = self.suite.finish(session, self.results, self.blocked)
        if outcome is None:  # a pytest-xdist worker: the controller reports the run
            return
        self.config.stash[_SESSION] = session
        used = ((r.nodeid, r.cassette) for r in self.results)
        unsaved = pytest_changed.update_map(self.config.rootpath, used)
        if unsaved is not None:
            outcome.errors.append(unsaved)
        if outcome.errors or (outcome.unused and self.options.unused == "error"):
            fail_run(session)
        if self.options.report is not None:
            totals, extra = self.totals(), outcome.to_json()
            write_suite(Path(self.options.report), totals, self.results, self.blocked, extra)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        outcome = self.outcome
        if outcome is None or not (self.results or self.blocked or outcome.changes):
            return
        write = terminalreporter.write_line
        terminalreporter.section("otel-replay")
        unevaluated = sum(r.outcome == "not evaluated" for r in self.results)
        extra = f" · {unevaluated} not evaluated" if unevaluated else ""
        write(self.totals().line() + f" · {len(self.results)} blocks{extra}")
        for result in self.results:
            for miss in result.summary.misses:
                write(f"{result.nodeid}: {miss}")
        outcome.write(terminalreporter, self.options.unused, self.config.stash[_SESSION])
        for message in self.blocked:
            write(f"egress blocked: {message}")

    def pytest_unconfigure(self) -> None:
        self.suite.cleanup()
        if self.gateway is not None:
            self.gateway.stop()
            self.gateway = None
        if self.options.egress:
            from otel_replay.frontends.egress import allow_egress

            allow_egress()
