"""``otel-replay refresh CASSETTE [--yes]``: record a cassette again with the command that
recorded it.

A recording run keeps its agent's command in the cassette (``source.command``), with the
directory it ran in (``source.cwd``, relative to the cassette's folder) and the upstreams
named on its command line (``source.upstreams``). ``refresh`` prints them, asks before
running anything (``y`` at a terminal; ``--yes`` where there is none), runs ``otel-replay
record`` with them into a new file beside the cassette, and puts that file in the
cassette's place only when the run succeeded and recorded model calls: a failed run leaves
the cassette as it was.

Whoever can edit a cassette chooses what ``refresh`` runs; the confirmation shows it.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from otel_replay import providers
from otel_replay.cassette.model import load
from otel_replay.cassette.provenance import RecordedRun, recorded_run
from otel_replay.core.errors import CassetteError
from otel_replay.redaction.shapes import PLACEHOLDER_RE

__all__ = ["record_argv", "refresh_command"]

_NAME = "otel-replay refresh"


def _say(message: str) -> None:
    print(f"{_NAME}: {message}", file=sys.stderr)


def record_argv(run: RecordedRun, cassette: Path) -> list[str]:
    """The ``otel-replay record`` command line that records ``run`` into ``cassette``:
    its upstreams as the options that named them, then its command after ``--``."""
    argv = [sys.executable, "-m", "otel_replay", "record", "--cassette", str(cassette)]
    for name, url in run.upstreams.items():
        row = providers.spec(name)
        if row is not None and row.option_help is not None:
            argv += [f"--upstream-{name}", url]
        else:
            argv += ["--upstream", f"{name}={url}"]
    return [*argv, "--", *run.command]


def _no_command(cassette: Path, source: dict[str, object]) -> int:
    traces = source.get("traces")
    if source.get("command") == "build":
        files = ", ".join(map(str, traces)) if isinstance(traces, list) else "?"
        built = f"it was built from traces: {files}"
        again = f"or build it again from newer traces with `otel-replay build TRACES -o {cassette}`"
    else:  # the pytest plugin or the Python API recorded it
        built = "it was recorded by tests, not by a command"
        again = "or run its tests with `pytest --otel-replay=record`"
    _say(
        f"{cassette} records no command to run again ({built}); re-record it with "
        f"`otel-replay record --cassette {cassette} -- CMD...`, {again}"
    )
    return 2


def _confirmed(cassette: Path, yes: bool) -> int | None:
    """None to go on; else the exit code (not confirmed, or no terminal to ask at)."""
    if yes:
        return None
    if sys.stdin is None or not sys.stdin.isatty():
        _say("no terminal to confirm at; pass --yes to run the command above")
        return 2
    try:
        answer = input(f"Run it in record mode and rewrite {cassette}? [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        return None
    _say(f"not confirmed; {cassette} is unchanged")
    return 1


def refresh_command(cassette: Path, yes: bool) -> int:
    """Record ``cassette`` again with the command it records (see the module's doc)."""
    loaded = load(cassette)
    run = recorded_run(loaded.source, cassette)
    if run is None:
        return _no_command(cassette, loaded.source)
    hidden = [a for a in [*run.command, *run.upstreams.values()] if PLACEHOLDER_RE.search(a)]
    if hidden:
        _say(
            f"the recorded command holds values hidden when it was recorded ({hidden[0]}); "
            f"re-record it with `otel-replay record --cassette {cassette} -- CMD...`"
        )
        return 2
    cwd = run.cwd or Path.cwd()
    if not cwd.is_dir():
        _say(f"the directory the command ran in, {cwd}, is not here; re-record it by hand")
        return 2
    print(f"{_NAME}: {cassette} was recorded by:")
    print(f"  {shlex.join(run.command)}")
    print(f"  in {cwd}" + ("" if run.cwd else " (the current directory: none was recorded)"))
    for name, url in run.upstreams.items():
        print(f"  upstream {name}: {url}")
    sys.stdout.flush()
    refused = _confirmed(cassette, yes)
    if refused is not None:
        return refused
    return _record_again(run, cassette, cwd)


def _record_again(run: RecordedRun, cassette: Path, cwd: Path) -> int:
    fresh = cassette.with_name(f".{cassette.name}.refresh-{os.getpid()}.json").resolve()
    try:
        code = subprocess.call(record_argv(run, fresh), cwd=cwd)
        if code:
            _say(f"the command failed (exit {code}); {cassette} is unchanged")
            return code
        try:
            count = len(load(fresh).interactions) if fresh.exists() else 0
        except CassetteError as exc:
            _say(f"the new recording cannot be read ({exc}); {cassette} is unchanged")
            return 1
        if not count:
            _say(f"the command made no model call; {cassette} is unchanged")
            return 1
        os.replace(fresh, cassette)
    finally:
        fresh.unlink(missing_ok=True)
    _say(f"{count} interaction{'s' if count != 1 else ''} recorded again → {cassette}")
    return 0
