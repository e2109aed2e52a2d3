"""``build_file`` and ``otel-replay build``: a cassette written straight from trace files,
with memory flat in the number of calls — the same text ``dump(build(...))`` writes, in
start-time order, atomically, and nothing written when nothing usable was found."""

from __future__ import annotations

import functools
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from test_build import call_span, texts, write_lines
from test_readers import make_span, traces

from otel_replay import readers
from otel_replay.cassette.model import Cassette, dump, dumps, load
from otel_replay.cassette.writer import CassetteWriter
from otel_replay.core.errors import CassetteError
from otel_replay.core.exchange import CanonicalRequest, Exchange, Response
from otel_replay.pipeline.build import build, build_file
from otel_replay.readers import window as dedupe
from otel_replay.redaction.redact import Redactor

CLI = [sys.executable, "-m", "otel_replay"]
SECRET = "sk-proj-" + "Q" * 40


def _without_build_time(text: str) -> str:
    doc = json.loads(text)
    del doc["source"]["built_at"], doc["source"]["recorded_at"]  # each to the second
    return json.dumps(doc)


def test_build_file_writes_what_dump_of_build_writes(tmp_path: Path) -> None:
    spans = [
        call_span(f"question {i}", span_id=f"{i + 1:016x}", start=10_000 - i * 10)
        for i in range(40)
    ]
    spans.append(call_span(f"key {SECRET} and \\ud800", span_id="f" * 16, start=5))
    path = write_lines(tmp_path / "traces.jsonl", *(traces(s) for s in spans))
    redactor = Redactor()

    streamed = tmp_path / "streamed.json"
    report = build_file([path], streamed, redactor=redactor)
    in_memory = tmp_path / "in_memory.json"
    dump(build([path], redactor=redactor), in_memory)

    assert (report.interactions, report.skipped, report.written) == (41, 0, True)
    text = streamed.read_text(encoding="utf-8")
    assert _without_build_time(text) == _without_build_time(in_memory.read_text("utf-8"))
    assert SECRET not in text
    starts = [ex.start_ns for ex in load(streamed).interactions]
    assert starts == sorted(starts)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_interactions_released_out_of_order_are_written_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A window of 2 releases a late-arriving early call after later ones.
    monkeypatch.setattr(readers, "Window", functools.partial(dedupe.Window, 2))
    spans = [call_span(f"q{i}", span_id=f"{i + 1:016x}", start=1_000 * (i + 1)) for i in range(6)]
    spans.append(call_span("earliest", span_id="e" * 16, start=10))
    path = write_lines(tmp_path / "traces.jsonl", *(traces(s) for s in spans))
    out = tmp_path / "out.json"
    build_file([path], out)
    assert texts(load(out)) == ["earliest", "q0", "q1", "q2", "q3", "q4", "q5"]


def _exchange(i: int, start: int) -> Exchange:
    return Exchange(
        provider="openai",
        operation="chat",
        request=CanonicalRequest("/v1/chat/completions", model="m", messages=[{"n": i}]),
        response=Response(status=200, body={"n": i, "text": "é" * (i % 7)}),
        start_ns=start,
        end_ns=start + 1,
    )


def test_writer_sorts_by_start_keeping_arrival_order_for_ties(tmp_path: Path) -> None:
    rng = random.Random(7)
    exchanges = [_exchange(i, rng.randrange(20)) for i in range(200)]
    out = tmp_path / "c.json"
    with CassetteWriter(out) as writer:
        for ex in exchanges:
            writer.add(ex)
        writer.commit({"command": "test"})
    want = Cassette(sorted(exchanges, key=lambda e: e.start_ns), {"command": "test"})
    assert out.read_text(encoding="utf-8") == dumps(want)


def test_an_empty_build_writes_an_empty_cassette(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "traces.jsonl", traces(make_span({}, name="step")))
    out = tmp_path / "out.json"
    report = build_file([path], out)
    assert (report.interactions, report.written) == (0, True)
    assert load(out).interactions == []
    assert out.read_text(encoding="utf-8").endswith('"interactions": []\n}\n')


def test_a_value_without_json_form_leaves_the_old_cassette_and_no_spill(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    out.write_text("old", encoding="utf-8")
    bad = _exchange(1, 5)
    bad.response.body = {"x": float("nan")}
    with pytest.raises(CassetteError, match=r"c\.json: cannot write"), CassetteWriter(out) as w:
        w.add(_exchange(0, 1))
        w.add(bad)
    assert out.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]


def test_cli_build_of_only_bad_records_keeps_the_old_cassette(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text('{"resourceSpans": [\n{broken\n', encoding="utf-8")
    out = tmp_path / "cassette.json"
    out.write_text("keep me", encoding="utf-8")
    done = subprocess.run(
        [*CLI, "build", str(path), "-o", str(out)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done.stderr
    assert "nothing usable in 2 bad records; no cassette written" in done.stderr
    assert out.read_text(encoding="utf-8") == "keep me"


def test_cli_build_writes_and_counts(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "traces.jsonl",
        traces(call_span("one", span_id="1" * 16, start=1)),
        traces(call_span("two", span_id="2" * 16, start=2)),
    )
    with path.open("a", encoding="utf-8") as handle:
        handle.write("not json\n")
    out = tmp_path / "deep" / "cassette.json"
    done = subprocess.run(
        [*CLI, "build", str(path), "-o", str(out)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert f"2 interactions → {out} (1 bad record skipped)" in done.stderr
    assert texts(load(out)) == ["one", "two"]


def test_parent_links_stay_bounded_in_a_long_file() -> None:
    """Links are held while an exchange in the window may need them: a long file does not
    grow them."""
    window = dedupe.Window(size=4)
    most = 0
    for i in range(2_000):
        span = make_span({}, name="tool", span_id=f"{i + 1:016x}", parent=f"{i + 2:016x}")
        window.note(span)
        if i % 10 == 0:
            list(window.add(_exchange(i, i)))
        most = max(most, len(window.links))
    assert most <= 4 * 4 * 10  # the window, and about two generations of 4 exchanges
    list(window.flush())


def test_every_call_of_a_long_file_joins_its_layers() -> None:
    """Each call's lower layer (exported first) joins its upper one through the HTTP span
    between them, however many calls came before."""
    window = dedupe.Window(size=8)
    out: list[Exchange] = []

    def layer(i: int, level: int) -> Exchange:
        ex = _exchange(i, 1_000 * i + level)
        ex.source, ex.trace_id = "openinference", f"{i + 1:032x}"
        ex.span_id = f"{level:04x}{i:012x}"
        ex.parent_span_id = f"{level + 1:04x}{i:012x}" if level == 1 else None
        return ex

    for i in range(300):
        upper, http, lower = (bytes.fromhex(f"{level:04x}{i:012x}") for level in (0, 2, 1))
        window.links.add(http, upper)
        window.links.add(lower, http)
        out += window.add(layer(i, 1))
        out += window.add(layer(i, 0))
    out += window.flush()
    assert len(out) == 300


def test_layers_in_two_files_join_across_many_calls(tmp_path: Path) -> None:
    """The agent's spans in one file, the gateway's in another (read after it): a gateway
    span joins its instrumentation span through the agent's HTTP span whenever that is
    still in the window, exactly as it would were no parent link ever dropped."""
    from test_build import own_span

    calls = 700  # more than a window: the earliest calls leave it before their layers
    agent, gateway = [], []
    for i in range(calls):
        trace = f"{i + 1:032x}"
        start = 1_000 + i * 10_000
        top, http = f"{3 * i + 1:016x}", f"{3 * i + 2:016x}"
        agent.append(call_span(f"q{i}", trace=trace, span_id=top, start=start))
        step = make_span({"http.request.method": "POST"}, name="POST", span_id=http, parent=top)
        step.trace_id = bytes.fromhex(trace)
        agent.append(step)
        own = own_span(span_id=f"{3 * i + 3:016x}", parent=http, start=start + 200)
        own.trace_id = bytes.fromhex(trace)
        gateway.append(own)
    folder = tmp_path / "traces"
    folder.mkdir()
    write_lines(folder / "1-agent.jsonl", *(traces(s) for s in agent))
    write_lines(folder / "2-gateway.jsonl", traces(*gateway, service="otel-replay"))
    out = tmp_path / "c.json"
    report = build_file([folder], out)
    every_link = tmp_path / "every_link.json"
    with pytest.MonkeyPatch.context() as patch:  # the same build, never dropping a link
        patch.setattr(dedupe, "PARENT_LINKS", 10**9)
        patch.setattr(dedupe.Links, "released", lambda self, oldest: None)
        build_file([folder], every_link)
    assert load(out).interactions == load(every_link).interactions
    sources = [ex.source for ex in load(out).interactions]
    assert sources.count("otel-replay") == calls
    # the agent's calls that left the window before the gateway's file was read
    assert 0 < sources.count("genai-semconv") == report.interactions - calls < readers.WINDOW


def test_start_times_beyond_int64_are_written_in_order(tmp_path: Path) -> None:
    """OTLP times are unsigned 64-bit: a value past 2**63 sorts and writes."""
    exchanges = [_exchange(0, 2**64 - 1), _exchange(1, 5), _exchange(2, 2**63)]
    out = tmp_path / "c.json"
    with CassetteWriter(out) as writer:
        for ex in exchanges:
            writer.add(ex)
        writer.commit({})
    assert [ex.start_ns for ex in load(out).interactions] == [5, 2**63, 2**64 - 1]


def test_cli_build_of_a_trace_without_model_calls_explains_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """An agent's own telemetry (Codex's spans, say) holds nothing to replay: ``build``
    says what ``doctor`` says and fails, rather than write an empty cassette."""
    spans = [make_span({"conversation.id": "c1"}, name=n) for n in ("codex.turn", "tool")]
    path = write_lines(tmp_path / "traces.jsonl", traces(*spans))
    out = tmp_path / "cassette.json"
    done = subprocess.run(
        [*CLI, "build", str(path), "-o", str(out)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done.stderr
    doctor = subprocess.run([*CLI, "doctor", str(path)], capture_output=True, text=True)
    said = [f"otel-replay build: {line}" for line in doctor.stdout.splitlines()]
    assert done.stderr.splitlines() == [
        *said,
        "otel-replay build: nothing to replay; no cassette written",
    ]
    assert said[0].endswith("no model calls found among 2 spans: (unnamed instrumentation) (2)")
    assert not out.exists()
