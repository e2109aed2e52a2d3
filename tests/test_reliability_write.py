"""Writing never loses a recording: concurrent appenders to one cassette, a disk that fills
mid-run, a cassette reached through a symlink. Each case drives the CLI as a subprocess
with the official SDK as the agent, against the stub upstream."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from otel_replay.cassette.model import load
from otel_replay.testing.stub import run_stub

CLI = [sys.executable, "-m", "otel_replay"]
OPENAI_KEY = "sk-test-write-0123456789abcdef"
RUN_TIMEOUT = 120

# Makes the calls named on its command line ("PREFIX:COUNT"); with BARRIER set, it
# announces its first answer by a file and waits for its peer's before going on.
AGENT = """
import os, pathlib, sys, time
import openai
client = openai.OpenAI(max_retries=0)
barrier = os.environ.get("BARRIER")
for spec in sys.argv[1:]:
    prefix, count = spec.split(":")
    for i in range(int(count)):
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"{prefix} {i}"}])
        if barrier and i == 0:
            me, peer = barrier.split(",")
            pathlib.Path(me).touch()
            deadline = time.monotonic() + 60
            while not pathlib.Path(peer).exists() and time.monotonic() < deadline:
                time.sleep(0.01)
"""


def _agent(tmp_path: Path) -> Path:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    return agent


def _cli(args: list[str], agent_args: list[str], agent: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, *args, "--", sys.executable, str(agent), *agent_args],
        env={**os.environ, "OPENAI_API_KEY": OPENAI_KEY, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=RUN_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


def _contents(cassette: Path) -> list[str]:
    """The user message of every recorded request, in cassette order."""
    texts = []
    for ex in load(cassette).interactions:
        assert isinstance(ex.raw_request, dict)
        texts.append(str(ex.raw_request["messages"][0]["content"]))
    return texts


def test_two_auto_runs_appending_to_one_cassette_keep_both_runs_recordings(
    tmp_path: Path,
) -> None:
    agent, cassette = _agent(tmp_path), tmp_path / "shared.json"
    with run_stub() as stub:
        code, err = _finish(
            _cli(
                ["record", "--cassette", str(cassette), "--upstream-openai", stub.openai_url],
                ["original:3"],
                agent,
            )
        )
        assert code == 0, err
        runs = []
        for me, peer in (("a", "b"), ("b", "a")):
            barrier = f"{tmp_path / me},{tmp_path / peer}"
            args = ["replay", "--mode", "auto", "--cassette", str(cassette)]
            args += ["--upstream-openai", stub.openai_url]
            runs.append(_cli(args, ["original:3", f"worker-{me}:20"], agent, BARRIER=barrier))
        results = [_finish(proc) for proc in runs]
    for code, err in results:
        assert code == 0, err
        assert "3 replayed · 20 live · 0 misses" in err, err
    contents = _contents(cassette)
    assert len(contents) == 43, contents
    for prefix in ("original", "worker-a", "worker-b"):
        count = 3 if prefix == "original" else 20
        assert sorted(c for c in contents if c.startswith(prefix)) == sorted(
            f"{prefix} {i}" for i in range(count)
        )
    # every recording replays offline, strictly
    code, err = _finish(
        _cli(
            ["replay", "--mode", "strict", "--cassette", str(cassette)],
            ["original:3", "worker-a:20", "worker-b:20"],
            agent,
        )
    )
    assert code == 0, err
    assert "43 replayed · 0 live · 0 misses" in err, err


# The CLI under a file-size limit, as on a disk that fills: SIGXFSZ ignored, a write past
# the limit fails with EFBIG ("File too large") like one on a full disk with ENOSPC.
LIMITED_CLI = """
import resource, runpy, signal, sys
limit = int(sys.argv.pop(1))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
sys.argv[0] = "otel-replay"
runpy.run_module("otel_replay", run_name="__main__", alter_sys=True)
"""
# Goes on after a failed call, as an agent with its own error handling does.
TOLERANT_AGENT = """
import sys
import openai
client = openai.OpenAI(max_retries=0)
ok = failed = 0
for i in range(int(sys.argv[1])):
    try:
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"call {i}"}])
        ok += 1
    except openai.APIError as exc:
        failed += 1
        last = exc
print(f"ok={ok} failed={failed}")
if failed:
    print(f"error: {last}")
"""


@pytest.mark.parametrize(
    ("file_limit", "calls"),
    [
        # room for about 14 of the spans, never enough to set any aside: each span is
        # written before its answer
        (36_000, 40),
        # room set aside for the first spans (their answers go first), then too little
        # left to set aside: the spans are written first again, until one cannot be
        (150_000, 80),
    ],
    ids=["no-room-aside", "room-aside-then-none"],
)
def test_disk_full_while_recording_stops_loudly_and_keeps_what_was_saved(
    tmp_path: Path, file_limit: int, calls: int
) -> None:
    agent = tmp_path / "tolerant.py"
    agent.write_text(TOLERANT_AGENT)
    cassette, traces = tmp_path / "c.json", tmp_path / "t.jsonl"
    with run_stub() as stub:
        record = ["record", "--cassette", str(cassette), "--traces", str(traces)]
        record += ["--upstream-openai", stub.openai_url, "--", sys.executable, str(agent)]
        record += [str(calls)]
        proc = subprocess.run(
            [sys.executable, "-c", LIMITED_CLI, str(file_limit), *record],
            env={**os.environ, "OPENAI_API_KEY": OPENAI_KEY},
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
    err = proc.stderr
    assert proc.returncode == 1, err
    assert "Traceback" not in err, err
    saved = _contents(cassette)
    assert 0 < len(saved) < calls
    assert saved == [f"call {i}" for i in range(len(saved))]
    # every answer the agent got was saved: the call in flight when the disk filled got
    # a failure, as did every later one, in the provider's format
    ok, failed = len(saved), calls - len(saved)
    assert f"ok={ok} failed={failed}" in proc.stdout, proc.stdout
    assert "Error code: 507 - otel-replay: " in proc.stdout
    assert "File too large" in proc.stdout
    # the summary says what was not saved (the call in flight was forwarded live, its
    # answer not saved), and why, in one line each
    assert f"{ok + 1} live · 0 misses · 0 spans received · {failed} not saved" in err
    assert f"cannot write {traces}: File too large; recording stopped there" in err, err
    # every line of the trace file is whole, and the cassette replays offline
    assert len(traces.read_bytes().splitlines()) == len(saved)
    code, replay_err = _finish(
        _cli(
            ["replay", "--mode", "strict", "--cassette", str(cassette)],
            [f"call:{len(saved)}"],
            _agent(tmp_path),
        )
    )
    assert code == 0, replay_err
    assert f"{len(saved)} replayed · 0 live · 0 misses" in replay_err, replay_err


def _unwritable_store(tmp_path: Path, traces: Path, stub: Any) -> Any:
    """A recording gateway's configuration whose every trace write fails: a directory
    stands where the trace file should be."""
    from otel_replay.gateway.runner import GatewayConfig

    traces.mkdir()
    return GatewayConfig(
        mode="record",
        cassette=tmp_path / "c.json",
        traces=traces,
        upstreams={"openai": stub.openai_url, "anthropic": stub.anthropic_url},
        environ={"OPENAI_API_KEY": OPENAI_KEY},
    )


def test_unwritable_trace_store_fails_the_stream_in_flight_and_refuses_later_calls(
    tmp_path: Path,
) -> None:
    import anthropic
    import httpx

    from otel_replay.gateway.runner import GatewayThread

    traces = tmp_path / "traces"
    with run_stub() as stub:
        with GatewayThread(_unwritable_store(tmp_path, traces, stub)) as gateway:
            env = gateway.env
            messages = [{"role": "user", "content": "hello"}]
            # a client reading the stream to its end (the SDKs stop at its last event)
            url = env["OPENAI_BASE_URL"] + "/chat/completions"
            body = {"model": "gpt-4o-mini", "messages": messages, "stream": True}
            headers = {"authorization": f"Bearer {OPENAI_KEY}"}
            in_flight: type[BaseException] | None = None
            try:
                with httpx.stream("POST", url, json=body, headers=headers, timeout=30) as reply:
                    assert reply.status_code == 200
                    for _ in reply.iter_bytes():
                        pass
            except httpx.HTTPError as exc:
                in_flight = type(exc)
            with anthropic.Anthropic(
                base_url=env["ANTHROPIC_BASE_URL"], api_key="sk-ant-x", max_retries=0
            ) as claude:
                try:
                    claude.messages.create(
                        model="claude-haiku-4-5", max_tokens=10, messages=messages
                    )
                    refused = ""
                except anthropic.InternalServerError as exc:
                    refused = f"{exc.status_code} {exc.body}"
            summary = gateway.stop()
    assert in_flight is not None, "the stream that could not be saved ended in a failure"
    assert refused.startswith("507 ") and "otel_replay_write_failed" in refused
    assert summary.not_saved == 2 and summary.live == 1
    assert summary.write_errors and f"cannot write {traces}" in summary.write_errors[0]
    assert summary.line().endswith("· 2 not saved")
    assert not (tmp_path / "c.json").exists()


def test_unwritable_trace_store_fails_the_plain_call_in_flight(tmp_path: Path) -> None:
    """A plain answer is recorded before the agent gets it: one that could not be saved
    reaches the agent as a 507, so the agent never acts on an answer a replay lacks."""
    import openai

    from otel_replay.gateway.runner import GatewayThread

    traces = tmp_path / "traces"
    with run_stub() as stub:
        with GatewayThread(_unwritable_store(tmp_path, traces, stub)) as gateway:
            client = openai.OpenAI(
                base_url=gateway.env["OPENAI_BASE_URL"], api_key=OPENAI_KEY, max_retries=0
            )
            with pytest.raises(openai.APIStatusError) as failed:
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}]
                )
            summary = gateway.stop()
        forwarded = len(stub.received)
    assert failed.value.status_code == 507
    assert "answer not saved" in str(failed.value) and f"cannot write {traces}" in str(failed.value)
    assert forwarded == 1 and summary.live == 1 and summary.not_saved == 1
    assert not (tmp_path / "c.json").exists()


def test_symlinked_cassette_and_trace_file_are_written_through_to_their_targets(
    tmp_path: Path,
) -> None:
    agent = _agent(tmp_path)
    store = tmp_path / "store"
    store.mkdir()
    real_cassette, real_traces = store / "real.json", store / "real.jsonl"
    real_traces.write_text("")
    stale = '{"version": 1}\n'
    real_cassette.write_text(stale)
    work = tmp_path / "work"
    work.mkdir()
    cassette, traces = work / "c.json", work / "t.jsonl"
    cassette.symlink_to(os.path.relpath(real_cassette, work))
    traces.symlink_to(real_traces)
    with run_stub() as stub:
        upstream = ["--upstream-openai", stub.openai_url]
        record = ["record", "--cassette", str(cassette), "--traces", str(traces), *upstream]
        code, err = _finish(_cli(record, ["first:2"], agent))
        assert code == 0, err
        auto = ["replay", "--mode", "auto", "--cassette", str(cassette), *upstream]
        code, err = _finish(_cli(auto, ["first:2", "second:1"], agent))
        assert code == 0, err
    assert cassette.is_symlink() and traces.is_symlink(), "the links stay links"
    assert real_cassette.read_text() != stale
    assert _contents(real_cassette) == ["first 0", "first 1", "second 0"]
    assert len(real_traces.read_bytes().splitlines()) == 2
    assert sorted(p.name for p in work.iterdir()) == ["c.json", "t.jsonl"]
    code, err = _finish(
        _cli(
            ["replay", "--mode", "strict", "--cassette", str(cassette)],
            ["first:2", "second:1"],
            agent,
        )
    )
    assert code == 0, err
    assert "3 replayed · 0 live · 0 misses" in err, err


def test_cassette_that_cannot_be_written_keeps_the_runs_recordings_and_says_where(
    tmp_path: Path,
) -> None:
    agent, cassette = _agent(tmp_path), tmp_path / "c.json"
    temp = tmp_path / "tmp"
    temp.mkdir()
    with run_stub() as stub:
        upstream = ["--upstream-openai", stub.openai_url]
        code, err = _finish(
            _cli(["record", "--cassette", str(cassette), *upstream], ["old:30"], agent)
        )
        assert code == 0, err
        before = cassette.read_bytes()
        # the cassette grows past the file-size limit: the append cannot be written
        auto = ["replay", "--mode", "auto", "--cassette", str(cassette), *upstream]
        limit = str(len(before) + 1000)
        agent_run = [sys.executable, str(agent), "old:30", "new:2"]
        proc = subprocess.run(
            [sys.executable, "-c", LIMITED_CLI, limit, *auto, "--", *agent_run],
            env={**os.environ, "OPENAI_API_KEY": OPENAI_KEY, "TMPDIR": str(temp)},
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
    assert proc.returncode != 0, proc.stderr
    assert f"{cassette}: cannot write: File too large" in proc.stderr, proc.stderr
    assert cassette.read_bytes() == before
    kept = list(temp.glob("otel-replay-*.jsonl"))
    assert len(kept) == 1 and f"recordings are kept in {kept[0]}" in proc.stderr, proc.stderr
    rebuilt = tmp_path / "rebuilt.json"
    build = subprocess.run(
        [*CLI, "build", str(kept[0]), "-o", str(rebuilt)], capture_output=True, text=True
    )
    assert build.returncode == 0, build.stderr
    assert _contents(rebuilt) == ["new 0", "new 1"]
