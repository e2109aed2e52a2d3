"""What ``serve`` does before it prints its environment line (what a caller waits for,
and then sends its first request at once): the line means ready. The cassette is loaded
and indexed, the rule files read and the server serves, so a request sent right after the
line is answered as a warm one is; what a replay may never need (gRPC and protobuf, the
OTLP receivers, the span encoder, the build pipeline and the readers, ``why`` and the
differences it shows, the WebSocket APIs, a fork) is loaded when first used. A rule file
that cannot be read stops the run before the line."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

EMPTY = {"version": 2, "source": {}, "table": {}, "interactions": []}

# `serve` up to its line, in-process: the modules loaded then, and the gateway's state
UNTIL_THE_LINE = """
import builtins, os, sys
from otel_replay.frontends import cli
from otel_replay.gateway import runner

made = []
start = runner.GatewayThread.start

def recording(self, **options):
    made.append(self)
    return start(self, **options)

runner.GatewayThread.start = recording
say = builtins.print

def at_the_line(*args, **kwargs):
    if args and str(args[0]).startswith('{"env"'):
        server = made[0].server
        import gc
        import aiohttp.connector as connector
        from otel_replay.redaction import shapes
        table = [s for group in shapes.shapes_by_first().values() for s in group]
        state = {
            "modules": sorted(sys.modules),
            "serving": server is not None and server.port > 0,
            "indexed": server is not None and server.session.index.built is not None,
            "frozen": gc.get_freeze_count(),
            "shapes": [sum(s.pattern._compiled is not None for s in table), len(table)],
            "bundle deferred": vars(connector._SSL_CONTEXT_VERIFIED).get("_deferred"),
        }
        say(repr(state), flush=True)
        os._exit(0)
    say(*args, **kwargs)

builtins.print = at_the_line
sys.exit(cli.main(["serve", "--mode", "strict", "--cassette", sys.argv[1]]))
"""

# loaded when first used (or never, for a replay): what the start must not pay for
WHEN_USED = (
    "grpc",
    "google.protobuf",
    "opentelemetry.proto",
    "otel_replay.otlp.http",
    "otel_replay.otlp.grpc",
    "otel_replay.spans.encode",
    "otel_replay.pipeline.build",
    "otel_replay.readers",
    "otel_replay.matching.why",
    "otel_replay.matching.diff",
    "difflib",
    # the WebSocket APIs (their frames, their replay), a fork's plan: when first used
    "otel_replay.gateway.websocket",
    "otel_replay.gateway.frames",
    "otel_replay.gateway.ws_replay",
    "otel_replay.gateway.fork",
    "otel_replay.session.fork",
)


def at_the_line(cwd: Path, cassette: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", UNTIL_THE_LINE, str(cassette)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and out.stdout, out.stderr
    state: dict[str, Any] = ast.literal_eval(out.stdout)
    return state


def loaded_at_the_line(cwd: Path, cassette: Path) -> list[str]:
    modules: list[str] = at_the_line(cwd, cassette)["modules"]
    return modules


def test_serve_prints_its_environment_once_the_gateway_serves_its_cassette(tmp_path):
    cassette = tmp_path / "c.json"
    cassette.write_text(json.dumps(EMPTY))
    # a project's pyproject.toml holding no rules is read
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "agent"\n')
    state = at_the_line(tmp_path, cassette)
    assert state["serving"] and state["indexed"]
    assert "otel_replay.gateway.app" in state["modules"]
    assert [name for name in WHEN_USED if name in state["modules"]] == []


def test_the_start_pays_for_what_a_replay_uses(tmp_path):
    # what the start makes is out of the collector's sight (a first collection would walk
    # it all), the secret shapes' patterns are compiled as a match is told apart by them
    # (not all at once), and aiohttp's TLS contexts have not read the certificate bundle
    cassette = tmp_path / "c.json"
    cassette.write_text(json.dumps(EMPTY))
    state = at_the_line(tmp_path, cassette)
    assert state["frozen"] > 10_000
    compiled, shapes = state["shapes"]
    assert 0 < compiled < shapes / 4
    assert state["bundle deferred"] is True


def test_a_rule_file_is_read_before_the_line(tmp_path):
    # a rule file in force is parsed (and checked) before serving: its parser is loaded
    cassette = tmp_path / "c.json"
    cassette.write_text(json.dumps(EMPTY))
    (tmp_path / "otel-replay.toml").write_text('[[ignore]]\npath = "params.user"\n')
    modules = loaded_at_the_line(tmp_path, cassette)
    assert "otel_replay.matching.rulefile" in modules


def serve_at_once(cwd: Path, cassette: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "otel_replay", "serve", "--mode", "strict"]
    return subprocess.run(
        [*command, "--cassette", str(cassette)],
        cwd=cwd,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_bad_rule_file_stops_serve_before_its_line(tmp_path):
    cassette = tmp_path / "c.json"
    cassette.write_text(json.dumps(EMPTY))
    (tmp_path / "otel-replay.toml").write_text('[[volatile]]\nkind = "x"\npattern = "(a"\n')
    run = serve_at_once(tmp_path, cassette)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith("otel-replay: otel-replay.toml")


def test_bad_rules_recorded_in_the_cassette_stop_serve_before_its_line(tmp_path):
    cassette = tmp_path / "c.json"
    rules = {"file": '[[volatile]]\nkind = "x"\npattern = "(a"\n'}
    cassette.write_text(json.dumps({**EMPTY, "source": {"rules": rules}}))
    run = serve_at_once(tmp_path, cassette)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith(f"otel-replay: {cassette}: source.rules")
