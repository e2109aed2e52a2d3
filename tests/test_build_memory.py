"""What keeps ``build_file``'s memory flat writes the very text a whole cassette would:
the agent spans (``source.spans``) kept in a temporary file and written one at a time, the
head around them, and the identity memos emptied between calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_build import call_span, write_lines
from test_build_file import SECRET, _without_build_time
from test_readers import make_span, traces

from otel_replay.cassette.format import LongArray
from otel_replay.cassette.model import dump
from otel_replay.cassette.v1 import head_pieces, head_text
from otel_replay.core import memo
from otel_replay.core.errors import CassetteError
from otel_replay.core.jsontext import encodes
from otel_replay.pipeline.build import build, build_file
from otel_replay.readers.agent_spans import AgentSpans
from otel_replay.redaction.redact import Redactor


def _agent_span(trace: str, i: int, name: str, start: int) -> Any:
    span = make_span(
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name},
        name=f"execute_tool {name}",
        span_id=f"{0xA000 + i:016x}",
        start=start,
        end=start + 5,
    )
    span.trace_id = bytes.fromhex(trace)
    return span


def _trace_file(tmp_path: Path, names: list[str]) -> Path:
    """Three traces, each a model call among agent spans named ``names``, read out of
    start order."""
    requests = []
    for t in range(3):
        trace = f"{t + 1:032x}"
        spans = [call_span(f"question {t}", trace=trace, span_id=f"{t + 1:016x}", start=500)]
        spans += [
            _agent_span(trace, t * 100 + i, name, 1_000 - i * 7) for i, name in enumerate(names)
        ]
        requests.append(traces(*reversed(spans)))
    return write_lines(tmp_path / "traces.jsonl", *requests)


def _both(tmp_path: Path, path: Path) -> tuple[str, str]:
    redactor = Redactor()
    streamed, whole = tmp_path / "streamed.json", tmp_path / "whole.json"
    build_file([path], streamed, redactor=redactor)
    dump(build([path], redactor=redactor), whole)
    return streamed.read_text("utf-8"), whole.read_text("utf-8")


def test_agent_spans_written_one_at_a_time_read_as_the_whole_cassette(tmp_path: Path) -> None:
    names = ["search", "naïve 工具", f"key {SECRET}", "read"]
    streamed, whole = _both(tmp_path, _trace_file(tmp_path, names))

    assert _without_build_time(streamed) == _without_build_time(whole)
    spans = json.loads(streamed)["source"]["spans"]
    assert len(spans) == 3 * len(names)
    assert [s["trace_id"] for s in spans] == sorted(s["trace_id"] for s in spans)
    first = [s["start_ns"] for s in spans[: len(names)]]
    assert first == sorted(first)
    assert SECRET not in streamed and "naïve 工具" in streamed
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_spilled_agent_spans_are_the_ones_kept_in_memory(tmp_path: Path) -> None:
    spans = [_agent_span(f"{i % 3 + 1:032x}", i, f"tool {i}", 900 - i) for i in range(30)]
    kept = {}
    for folder in (None, tmp_path):
        agent_spans = AgentSpans(limit=15, folder=folder)
        for i, span in enumerate(spans):
            if i == 4:
                agent_spans.call(f"{1:032x}")
                agent_spans.call(f"{3:032x}")
            name = "odd \ud800 é" if i == 6 else span.name  # what UTF-8 cannot carry
            agent_spans.add(span, {"gen_ai.tool.name": name}, "scope")
        order = agent_spans.order({f"{1:032x}", f"{3:032x}"})
        odd = [agent_spans.record(i)["span_id"] for i in agent_spans.surrogates(order)]
        kept[folder] = (agent_spans.records({f"{1:032x}", f"{3:032x}"}), agent_spans.omitted, odd)
        agent_spans.close()

    assert kept[None] == kept[tmp_path]
    records, omitted, odd = kept[None]
    assert (len(records), omitted) == (15, 5)  # 20 spans of traces 1 and 3, 15 kept
    assert odd == [f"{0xA006:016x}"]
    assert [r["trace_id"] for r in records] == sorted(r["trace_id"] for r in records)
    assert list(tmp_path.iterdir()) == []


_finite = st.floats(allow_nan=False, allow_infinity=False)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _finite | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
_texts = st.sampled_from(["", "\x00long array 0\x00", "\ud800", "é", "x"]) | st.text(max_size=4)


@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
@example({"a": "\x00long array 0\x00"}, {"b": [{"c": [1, "é"]}]})  # reads like a hole
@example({"k\ud800": 1}, {"s": ["é", {}]})  # the head escaped for itself
@example({"k": "é"}, {"s": [["\udfff"], []], "t": []})  # ... for an item
@given(
    st.dictionaries(_texts, _json | _texts, max_size=4),
    st.dictionaries(_texts, st.lists(_json | _texts, max_size=3), min_size=1, max_size=2),
)
def test_a_long_array_reads_as_the_list_it_stands_for(
    source: dict[str, Any], arrays: dict[str, list[Any]]
) -> None:
    whole = {**source, **arrays}
    surrogates = not all(encodes(json.dumps(v, ensure_ascii=False)) for v in arrays.values())
    long = {
        k: LongArray(lambda v=v: iter(v), surrogates) if k in arrays else v
        for k, v in whole.items()
    }
    expected = head_text({"version": 2, "source": whole})
    assert "".join(head_pieces({"version": 2, "source": long})) == expected


def test_forget_empties_every_identity_memo() -> None:
    calls: list[object] = []
    square = memo.by_identity(lambda x: calls.append(x) or len(x))
    value = [1, 2, 3]
    assert (square(value), square(value)) == (3, 3)
    memo.forget()
    assert square(value) == 3
    assert calls == [value, value]


def test_agent_spans_that_cannot_be_kept_fail_as_the_cassette_does(tmp_path: Path) -> None:
    path = _trace_file(tmp_path, ["search", "read"])
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")

    with pytest.raises(CassetteError, match="cannot write") as failed:
        build_file([path], blocked / "cassette.json", redactor=Redactor())

    assert str(blocked / "cassette.json") in str(failed.value)
    assert blocked.read_text() == "not a folder"
