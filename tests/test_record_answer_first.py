"""A recorded plain answer reaches the agent before its span is written only where the
span is sure to find room: space set aside past the trace file's end (``fallocate``),
within the file-size limit. Elsewhere the span is written first, so that an answer which
could not be saved reaches the agent as a failure; a stream's span is written before its
end. Real peers: the official SDKs against the stub upstream, through a record-mode
gateway."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from otel_replay.cassette.model import load
from otel_replay.core import diskspace
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.otlp import store as store_mod
from otel_replay.otlp.store import TraceStore
from otel_replay.testing.stub import StubUpstream, run_stub

KEY = "sk-test-first-0123456789abcdef"
MESSAGES = [{"role": "user", "content": "hello"}]


class HeldWrites:
    """Holds each write to the trace file until the agent says it has its answer (or
    ``wait`` seconds pass), and notes for each whether the agent had it by then."""

    def __init__(self, traces: Path, wait: float) -> None:
        self.traces = traces
        self.wait = wait
        self.answered = threading.Event()
        self.seen: list[bool] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        append = store_mod._LineFile.append
        held = self

        def holding(self: store_mod._LineFile, line: bytes) -> None:
            if self.path == held.traces:
                held.seen.append(held.answered.wait(held.wait))
            append(self, line)

        monkeypatch.setattr(store_mod._LineFile, "append", holding)


@pytest.fixture
def stub() -> Iterator[StubUpstream]:
    with run_stub() as running:
        yield running


def _config(tmp_path: Path, stub: StubUpstream) -> GatewayConfig:
    return GatewayConfig(
        mode="record",
        cassette=tmp_path / "c.json",
        traces=tmp_path / "t.jsonl",
        upstream_openai=stub.openai_url,
        grpc_port=None,
        environ={"OPENAI_API_KEY": KEY},
    )


def _call(env: dict[str, str], held: HeldWrites, *, stream: bool) -> str:
    """One call; a stream read to its very end (the SDKs stop at its last event, which
    reaches the agent before the span is written either way)."""
    if stream:
        url = env["OPENAI_BASE_URL"] + "/chat/completions"
        body = {"model": "gpt-4o-mini", "messages": MESSAGES, "stream": True}
        headers = {"authorization": f"Bearer {KEY}"}
        with httpx.stream("POST", url, json=body, headers=headers, timeout=30) as reply:
            assert reply.status_code == 200
            text = b"".join(reply.iter_bytes()).decode()
        assert text.rstrip().endswith("data: [DONE]")
    else:
        client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key=KEY, max_retries=0)
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
        text = reply.choices[0].message.content or ""
    held.answered.set()
    return text


def _record_one(
    tmp_path: Path,
    stub: StubUpstream,
    monkeypatch: pytest.MonkeyPatch,
    *,
    stream: bool,
    wait: float,
) -> list[bool]:
    """Record one call with its span's write held (see ``HeldWrites``): for each write,
    whether the agent had its answer by then. The call is recorded either way."""
    held = HeldWrites(tmp_path / "t.jsonl", wait=wait)
    held.install(monkeypatch)
    with GatewayThread(_config(tmp_path, stub)) as gateway:
        assert _call(gateway.env, held, stream=stream)
        summary = gateway.stop()
    assert summary.live == 1 and summary.not_saved == 0
    recorded = load(tmp_path / "c.json").interactions
    assert len(recorded) == 1 and recorded[0].stream is stream
    assert len((tmp_path / "t.jsonl").read_bytes().splitlines()) == 1
    return held.seen


def test_with_room_set_aside_a_plain_answer_reaches_the_agent_before_its_span_is_written(
    tmp_path: Path, stub: StubUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _record_one(tmp_path, stub, monkeypatch, stream=False, wait=30)
    assert seen == [True], "the span was written only once the agent had its answer"


def test_without_room_set_aside_the_span_is_written_before_the_answer(
    tmp_path: Path, stub: StubUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system that sets no room aside (or a full disk): the span is written while
    the agent still waits, so an answer that could not be saved would reach it as a
    failure (``test_reliability_write``)."""
    monkeypatch.setattr(diskspace, "set_aside", lambda fd, offset, length: False)
    seen = _record_one(tmp_path, stub, monkeypatch, stream=False, wait=1.0)
    assert seen == [False], "the span was written while the agent waited"


def test_a_streams_span_is_written_before_its_end_room_or_not(
    tmp_path: Path, stub: StubUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent has every event of a stream as it comes; its span is written before
    the stream ends, so that the agent's next call never waits behind it (a stream's
    span costs more than an agent's turn between two calls)."""
    seen = _record_one(tmp_path, stub, monkeypatch, stream=True, wait=1.0)
    assert seen == [False], "the span was written before the stream's end"


def test_room_is_set_aside_past_the_end_without_changing_the_file(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    traces.write_bytes(b'{"resourceSpans":[]}\n')
    size = traces.stat().st_size
    with TraceStore(traces) as store:
        assert store.room_for_traces(100_000)
        assert traces.stat().st_size == size, "the file keeps its size and its lines"
        assert traces.stat().st_blocks * 512 >= size + 100_000, "the blocks are allocated"
        assert store.append_traces(b'{"resourceSpans":[{}]}\n')
        assert store.room_for_traces(100_000)  # still within what was set aside
    # closed: what was not used is given back, and the lines are whole
    assert traces.stat().st_blocks * 512 < 100_000
    assert traces.read_bytes() == b'{"resourceSpans":[]}\n{"resourceSpans":[{}]}\n'


def test_a_stopped_store_has_no_room(tmp_path: Path) -> None:
    directory = tmp_path / "t.jsonl"
    directory.mkdir()  # a directory stands where the file should be: it cannot be opened
    with TraceStore(directory) as store:
        assert not store.room_for_traces(10)
        assert not store.append_traces(b"{}\n")
        assert store.failure is not None
        assert not store.room_for_traces(10)


# In a process of its own: a file-size limit, as on a disk with so much room left.
UNDER_LIMIT = """
import resource, signal, sys
from pathlib import Path
from otel_replay.otlp.store import TraceStore
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))
with TraceStore(Path(sys.argv[1])) as store:
    print(store.room_for_traces(40_000), store.room_for_traces(60_000))
    store.append_traces(b"x" * 30_000 + b"\\n")
    print(store.room_for_traces(10_000), store.room_for_traces(30_000))
"""


def test_no_room_is_promised_past_the_file_size_limit(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", UNDER_LIMIT, str(tmp_path / "t.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False", "True", "False"]


def test_a_file_that_cannot_have_room_set_aside_leaves_others_alone(tmp_path: Path) -> None:
    """A file that refuses ``fallocate`` (a device: ENODEV, as a file system without it
    answers EOPNOTSUPP) is refused room for itself alone; a trace file elsewhere still
    gets room."""
    device = os.open(os.devnull, os.O_WRONLY)
    try:
        assert not diskspace.set_aside(device, 0, 4096)
    finally:
        os.close(device)
    with TraceStore(tmp_path / "t.jsonl") as store:
        assert store.room_for_traces(4096)
