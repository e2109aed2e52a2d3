"""Hostile and broken cassettes: every value that reaches the wire is checked as the cassette
loads, a path that is not a regular file is refused at once, and reading and nesting are
bounded. Each is hit the way a user would: the CLI as a subprocess (``replay``, ``why``,
``serve``, ``rules show``), the pytest plugin in a subprocess session, ``load`` itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from otel_replay.cassette import model
from otel_replay.cassette.model import load
from otel_replay.cassette.wire import MAX_DEPTH
from otel_replay.core.errors import CassetteError

pytest_plugins = ["pytester"]

CLI = [sys.executable, "-m", "otel_replay"]
# a child that blocks on a FIFO or reads /dev/zero without end fails by this, not hangs
LIMIT_MEMORY = 'ulimit -v 4000000; exec "$@"'
TIMEOUT = 60


def _interaction(**response: Any) -> dict[str, Any]:
    return {
        "provider": "openai",
        "operation": "chat",
        "request": {
            "endpoint": "/v1/chat/completions",
            "model": "gpt-4o-mini",
            "system": None,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": None,
            "params": {},
        },
        "stream": "events" in response,
        "response": {"status": 200, "headers": {"content-type": "application/json"}, **response},
        "source": "otel-replay",
        "start_ns": 0,
        "end_ns": 0,
    }


def _cassette(*interactions: dict[str, Any]) -> str:
    good = _interaction(body={"choices": []})
    doc = {"version": 1, "source": {}, "interactions": [good, good, good, *interactions]}
    return json.dumps(doc, indent=2)


def _events(**event: Any) -> list[dict[str, Any]]:
    return [{"t": 0.0, "json": {"ok": True}}, {"t": 0.1, "data": "[DONE]", **event}]


BAD_VALUES: dict[str, tuple[dict[str, Any], str]] = {
    "status -1": ({"status": -1}, "interactions[3].response.status: HTTP status -1"),
    "status 999": ({"status": 999}, "interactions[3].response.status: HTTP status 999"),
    "status 0 without a fault": ({"status": 0}, "interactions[3].response.status"),
    "unknown fault": (
        {"status": 0, "fault": "explode"},
        "interactions[3].response.fault: unknown fault 'explode'",
    ),
    "header name with a space": (
        {"headers": {"x bad": "1"}},
        "interactions[3].response.headers: header name 'x bad' is not an HTTP token",
    ),
    "header name with a colon": (
        {"headers": {"x-a:b": "1"}},
        "interactions[3].response.headers: header name",
    ),
    "header value with CR/LF": (
        {"headers": {"x-a": "1\r\nset-cookie: stolen=1"}},
        "interactions[3].response.headers.x-a: header value holds a CR, LF or NUL",
    ),
    "event name with LF": (
        {"events": _events(event="done\ndata: injected")},
        "interactions[3].response.events[1].event: event name holds",
    ),
    "event data with CR": (
        {"events": _events(data="a\rdata: injected")},
        "interactions[3].response.events[1].data: event data holds a CR",
    ),
    "negative event time": (
        {"events": _events(t=-1)},
        "interactions[3].response.events[1].t: negative time offset",
    ),
}


def _run_cli(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", LIMIT_MEMORY, "sh", *CLI, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        input=stdin,
        env={**os.environ},
    )


def _commands(path: Path) -> dict[str, list[str]]:
    agent = [sys.executable, "-c", "pass"]
    return {
        "replay": ["replay", "--cassette", str(path), "--mode", "strict", "--", *agent],
        "replay auto": ["replay", "--cassette", str(path), "--mode", "auto", "--", *agent],
        "why": ["why", "--cassette", str(path)],
        "serve": ["serve", "--cassette", str(path), "--mode", "strict"],
        "rules show": ["rules", "show", "--cassette", str(path)],
    }


def _assert_refused(path: Path, expected: str, commands: tuple[str, ...]) -> None:
    """Each command exits 2 at once with one line naming the file and the problem."""
    for name, args in _commands(path).items():
        if name not in commands:
            continue
        proc = _run_cli(args, stdin="")
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, (name, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr, (name, proc.stderr[-2000:])
        assert len(lines) == 1, (name, proc.stderr[-2000:])
        assert str(path) in lines[0] and expected in lines[0], (name, lines[0])


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside tmp_path: conftest's schema check would (rightly) reject these."""
    return tmp_path_factory.mktemp("hostile")


@pytest.mark.parametrize("case", list(BAD_VALUES))
def test_wire_values_are_checked_when_a_cassette_loads(outside: Path, case: str) -> None:
    response, expected = BAD_VALUES[case]
    path = outside / "bad.json"
    path.write_text(_cassette(_interaction(**response)))
    with pytest.raises(CassetteError, match=expected.replace("[", r"\[").replace("]", r"\]")):
        load(path)
    _assert_refused(path, expected, ("replay", "why"))


def test_the_schema_refuses_what_loading_refuses() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from schema_check import schema_errors

    for case, (response, _) in BAD_VALUES.items():
        assert schema_errors(json.loads(_cassette(_interaction(**response)))), case
    fine = [
        _interaction(status=0, fault="reset"),
        _interaction(status=0, fault="timeout"),
        _interaction(status=200, fault="reset_mid_stream", events=_events()),
        _interaction(status=429, headers={"retry-after": "1", "x-request-id": "a b"}),
    ]
    assert schema_errors(json.loads(_cassette(*fine))) == []


def test_recorded_faults_and_statuses_still_load(outside: Path) -> None:
    path = outside / "fine.json"
    path.write_text(
        _cassette(
            _interaction(status=0, fault="reset"),
            _interaction(status=0, fault="timeout"),
            _interaction(status=200, fault="reset_mid_stream", events=_events()),
            _interaction(status=101),
            _interaction(status=599, headers={"retry-after": "1", "x-request-id": "a b\tc"}),
        )
    )
    responses = [ex.response for ex in load(path).interactions[3:]]
    assert [(r.status, r.fault) for r in responses] == [
        (0, "reset"),
        (0, "timeout"),
        (200, "reset_mid_stream"),
        (101, None),
        (599, None),
    ]


# --- paths that are not regular files ---------------------------------------------------


@pytest.fixture
def fifo(outside: Path) -> Iterator[Path]:
    path = outside / "cassette.json"
    os.mkfifo(path)
    yield path
    path.unlink()


NOT_FILES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "a FIFO": (lambda p: p, "not a regular file (a FIFO)"),
    "/dev/zero": (lambda p: Path("/dev/zero"), "not a regular file (a character device)"),
    "a directory": (lambda p: p.parent, "not a regular file (a directory)"),
}


@pytest.mark.parametrize("case", list(NOT_FILES))
def test_a_path_that_is_not_a_regular_file_is_refused_at_once(fifo: Path, case: str) -> None:
    pick, expected = NOT_FILES[case]
    path = pick(fifo)
    # the CLI first: there a blocking open or an endless read is bounded by the child's limits
    _assert_refused(path, expected, ("replay", "replay auto", "why", "serve", "rules show"))
    with pytest.raises(CassetteError, match=r"not a regular file"):
        load(path)


def test_the_pytest_plugin_refuses_a_fifo_cassette(pytester: pytest.Pytester, fifo: Path) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        test_agent=f"""
        def test_agent(otel_replay):
            with otel_replay({str(fifo)!r}, mode="strict"):
                pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:hypothesispytest", timeout=TIMEOUT)
    result.assert_outcomes(errors=0, failed=1)
    result.stdout.fnmatch_lines([f"otel-replay: {fifo}: not a regular file (a FIFO)"])
    assert "Traceback" not in result.stdout.str()


def test_a_cassette_over_the_size_limit_is_refused(
    outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = outside / "big.json"
    path.write_text(_cassette())
    monkeypatch.setattr(model, "MAX_CASSETTE_BYTES", path.stat().st_size - 1)
    with pytest.raises(CassetteError, match=r"over the \d+-byte limit for a cassette; split"):
        load(path)
    monkeypatch.setattr(model, "MAX_CASSETTE_BYTES", path.stat().st_size)
    assert len(load(path).interactions) == 3


def test_a_sparse_file_over_the_limit_is_refused_without_reading_it(outside: Path) -> None:
    path = outside / "sparse.json"
    with path.open("wb") as handle:
        handle.truncate(model.MAX_CASSETTE_BYTES + 1)
    _assert_refused(path, "-byte limit for a cassette", ("replay", "why"))


# --- nesting --------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [200_000, 5_000, 600, MAX_DEPTH + 2])
def test_deeply_nested_json_is_a_one_line_error(outside: Path, depth: int) -> None:
    path = outside / "deep.json"
    nested = "[" * depth + "]" * depth
    text = _cassette(_interaction(body={"choices": []})).replace('"choices": []', '"x": ' + nested)
    path.write_text(text)
    with pytest.raises(CassetteError, match=f"nested more than {MAX_DEPTH} levels deep"):
        load(path)
    _assert_refused(path, f"nested more than {MAX_DEPTH} levels deep", ("replay", "why"))


def test_nesting_within_the_limit_loads(outside: Path) -> None:
    path = outside / "deep.json"
    nested = "[" * 100 + "]" * 100
    text = _cassette(_interaction(body={"choices": []})).replace('"choices": []', '"x": ' + nested)
    path.write_text(text)
    body = load(path).interactions[3].response.body
    assert isinstance(body, dict) and isinstance(body["x"], list)


def test_a_deeply_nested_request_file_for_why_is_a_one_line_error(outside: Path) -> None:
    cassette = outside / "fine.json"
    cassette.write_text(_cassette())
    request = outside / "request.json"
    request.write_text("[" * 200_000 + "]" * 200_000)
    proc = _run_cli(["why", "--cassette", str(cassette), "--request", str(request)])
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines == [f"otel-replay: {request}: cannot read a JSON request (nested too deeply)"]
