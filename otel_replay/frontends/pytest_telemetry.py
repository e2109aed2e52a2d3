"""The pytest plugin's telemetry options, and what it checks on a block's spans.

``--otel-replay-telemetry=session`` (the default) points the OTLP variables at the
session's gateway before test modules are imported; ``blocks`` only inside blocks.
``--otel-replay-update-snapshots`` rewrites trace snapshots instead of comparing them;
``--otel-replay-check-genai`` fails a block whose model-call spans lack what the GenAI
semantic conventions require (``reports/conventions.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from otel_replay.frontends.telemetry import Telemetry, TelemetryGateway, redirected_elsewhere
from otel_replay.reports.conventions import genai_problems

if TYPE_CHECKING:
    from otel_replay.session.session import Session

__all__ = [
    "add_options",
    "block_problems",
    "early_gateway",
    "opened",
    "otel_replay_telemetry",
    "redirect",
]

_EARLY = pytest.StashKey[TelemetryGateway]()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """(A hook of the plugin module, which imports it.) Redirect before the initial
    conftests are imported; ``pytest_configure`` does it when this hook did not run."""
    redirect(early_config, early_config.known_args_namespace)


def redirect(config: pytest.Config, options: Any) -> None:
    """Start the session's gateway and point the OTLP variables at it before conftests and
    test modules are imported, so exporters they build deliver there (once a session)."""
    telemetry = getattr(options, "otel_replay_telemetry", "session")
    if _EARLY in config.stash or telemetry != "session" or options.otel_replay_mode == "off":
        return
    # the outermost session of a process serves until the process exits (see
    # TelemetryGateway); a session inside another one (pytester) stops with itself
    config.stash[_EARLY] = TelemetryGateway(redirect=True, until_exit=not redirected_elsewhere())


def early_gateway(config: pytest.Config) -> TelemetryGateway | None:
    return config.stash.get(_EARLY, None)


@pytest.fixture
def otel_replay_telemetry(request: pytest.FixtureRequest) -> TelemetryGateway:
    """(A fixture of the plugin module, which imports it.) Everything the session's
    gateway received so far, in blocks or not: ``.spans``, ``.logs``, ``.metrics``."""
    gateway = early_gateway(request.config)
    if gateway is None:
        pytest.fail(
            "otel-replay: no session telemetry: it needs --otel-replay-telemetry=session "
            "(the default) and a mode other than off",
            pytrace=False,
        )
    return gateway


def add_options(group: Any) -> None:
    group.addoption(
        "--otel-replay-telemetry",
        dest="otel_replay_telemetry",
        choices=("session", "blocks"),
        default="session",
        help="session: OTLP variables point at the gateway before test modules are imported "
        "(default); blocks: only inside otel_replay blocks",
    )
    group.addoption(
        "--otel-replay-update-snapshots",
        dest="otel_replay_update_snapshots",
        action="store_true",
        help="rewrite trace snapshots (run.assert_snapshot()) instead of comparing them",
    )
    group.addoption(
        "--otel-replay-check-genai",
        dest="otel_replay_check_genai",
        action="store_true",
        help="fail a block whose model-call spans lack what the GenAI conventions require",
    )


def opened(config: pytest.Config, shared: Any, session: Session) -> Telemetry:
    """A block's telemetry, opened on the session's ``SharedGateway`` before the block's
    session is swapped in (what was exported before the block lands outside it)."""
    update = bool(config.getoption("otel_replay_update_snapshots"))
    return Telemetry(shared.telemetry.received, session, update=update)


def block_problems(config: pytest.Config, telemetry: Telemetry | None) -> list[str]:
    """What the options ask to check on a finished block's telemetry, one line a problem."""
    if telemetry is None or not config.getoption("otel_replay_check_genai"):
        return []
    found = genai_problems(telemetry.spans, telemetry.logs)
    return [f"otel-replay GenAI conventions: {line}" for line in found]
