"""What ``serve`` does before it prints its environment line (what a test waits for, per
test file, in the TypeScript package): open the cassette, read the rule files, bind the
ports. The matching rules (built-in tables, agent profiles, their patterns), a fork's
machinery and the server are made after the line, on the gateway's thread; a rule file
that cannot be read still stops the run before it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

EMPTY = {"version": 2, "source": {}, "table": {}, "interactions": []}

# `serve` up to its line, in-process: the modules loaded then, as a sorted list
UNTIL_THE_LINE = """
import builtins, os, sys
from otel_replay.frontends import cli
from otel_replay.gateway import runner

runner._Early.run = lambda early, thread: None  # the server, built after the line: not here
say = builtins.print

def at_the_line(*args, **kwargs):
    if args and str(args[0]).startswith('{"env"'):
        say(repr(sorted(sys.modules)), flush=True)
        os._exit(0)
    say(*args, **kwargs)

builtins.print = at_the_line
sys.exit(cli.main(["serve", "--mode", "strict", "--cassette", sys.argv[1]]))
"""

# made after the line (or never, for this run): what the start must not wait for
AFTER_THE_LINE = (
    "otel_replay.matching.rules",
    "otel_replay.matching.normalize",
    "otel_replay.matching.profiles",
    "otel_replay.matching.rulefile",
    "otel_replay.matching.matcher",
    "otel_replay.matching.why",
    "otel_replay.session.fork",
    "otel_replay.gateway.app",
    "difflib",
    "subprocess",
    "importlib.resources",
    "asyncio",
    "aiohttp",
)


def loaded_at_the_line(cwd: Path, cassette: Path) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", UNTIL_THE_LINE, str(cassette)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and out.stdout, out.stderr
    modules: list[str] = ast.literal_eval(out.stdout)
    return modules


def test_serve_prints_its_environment_before_the_matching_rules_are_built(tmp_path):
    cassette = tmp_path / "c.json"
    cassette.write_text(json.dumps(EMPTY))
    # a project's pyproject.toml holding no rules is read, the rule parser not loaded
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "agent"\n')
    modules = loaded_at_the_line(tmp_path, cassette)
    # the probe saw a gateway ready to serve: its session open, its ports bound
    assert {"otel_replay.session.session", "otel_replay.gateway.listen"} <= set(modules)
    assert [name for name in AFTER_THE_LINE if name in modules] == []


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
