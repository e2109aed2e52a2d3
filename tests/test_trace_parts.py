"""The store checks otel-replay's own lines part by part (``redaction.trace_line``), each
distinct part once: what it writes is exactly what the whole-line redaction writes."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.core.exchange import Exchange, Response, SSEEvent
from otel_replay.otlp import codec
from otel_replay.otlp.attributes import dict_to_attributes
from otel_replay.otlp.store import TraceStore
from otel_replay.pipeline.build import redact_exchange
from otel_replay.providers import get
from otel_replay.redaction import trace_line
from otel_replay.redaction.redact import Redactor
from otel_replay.redaction.trace_line import JOINT_CHARS, CleanParts
from otel_replay.session.session import Session
from otel_replay.spans.encode import exchange_to_trace_json, export_request

SECRET = "sk-proj-" + "A1b2C3d4" * 5
B64_SECRET = base64.b64encode(f"key {SECRET}".encode()).decode()
# Fragments that make or break matches where parts meet: joints, secret names and
# values, quotes and escapes, encodings, placeholders, non-ASCII, a lone surrogate.
PIECES = [
    *('",', '"}', '"]', '"', "\\", '\\"', ",", "}", "]", "{", "[", ":", "=", " ", "\n"),
    *('":', '\\":', '": "', "\\u00", "\\n", "\\\\", '\\"},{\\"', "},{"),
    *("password", "api_key", "_token", "secret", "Bearer ", "Basic ", "?key=", "&token="),
    *("abcdefgh12345678", "A1b2C3d4" * 5, "sk-", "sk-proj-", SECRET, "ghp_", "AKIA", "eyJ"),
    *("://u:", "@h", "%73k-", "\\u0073k-", B64_SECRET, "c2st", "[REDACTED:jwt]"),
    *("tok-z9z9", "plain secret", "é", "日本", "\ud800", "-----BEGIN", "x" * 40),
]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
VALUES = {"A_TOKEN": "tok-z9z9", "B_SECRET": "plain secret", "C_KEY": "a:b=c d"}
REDACTORS = [Redactor(), Redactor(VALUES)]


LENGTHS = [1, trace_line._MIN_LENGTH]  # every part remembered (the strictest), as shipped
UNWRITTEN = Path("never-written.jsonl")  # making a line writes nothing


@contextlib.contextmanager
def remembered_from(length: int) -> Iterator[None]:
    """Parts of ``length`` or more remembered, in lines of any length (shipped, only long
    lines are cut into parts: a short one is redacted whole)."""
    saved = trace_line._MIN_LENGTH, trace_line.CUT_LINE, trace_line.LONG_LINE
    trace_line._MIN_LENGTH, trace_line.CUT_LINE, trace_line.LONG_LINE = length, 0, 0
    try:
        yield
    finally:
        trace_line._MIN_LENGTH, trace_line.CUT_LINE, trace_line.LONG_LINE = saved


def test_short_lines_are_redacted_whole() -> None:
    parts = CleanParts(Redactor().text)
    assert not parts.clean("x" * (trace_line.CUT_LINE - 1))
    assert parts.clean("x" * trace_line.CUT_LINE)


def test_a_middling_line_the_cheap_test_clears_is_not_cut() -> None:
    redactor = Redactor()
    cut: list[str] = []
    parts = CleanParts(
        lambda text: cut.append(text) or redactor.text(text), redactor.might_hold_secret
    )
    assert parts.clean("plain words, " * 1000)  # no anchor: cleared as it is
    assert cut == []
    flagged = '"see https://example.com/docs",' * 400  # an anchor: cut and checked
    assert parts.clean(flagged)
    assert cut
    secret = f'"note {SECRET}",' + '"plain words",' * 1000
    assert not parts.clean(secret)


@pytest.mark.parametrize("length", LENGTHS)
@settings(max_examples=50)
@given(st.lists(texts, min_size=1, max_size=6), st.lists(texts, max_size=4))
def test_parts_learnt_ahead_leave_the_verdict_the_whole_pass(
    length: int, batch: list[str], ahead: list[str]
) -> None:
    """Parts learnt from texts a line will hold (a request, while its provider works)
    never change a verdict: it stays the whole pass's."""
    for redactor in REDACTORS:
        with remembered_from(length):
            parts = CleanParts(redactor.text, redactor.might_hold_secret)
            for text in ahead:
                parts.learn(text)
            for text in batch:
                if "-----BEGIN" not in text:
                    assert parts.clean(text) is (redactor.text(text) == text), text


@pytest.mark.parametrize("length", LENGTHS)
@settings(max_examples=70)
@given(st.lists(texts, min_size=1, max_size=8))
def test_verdict_is_the_whole_pass(length: int, batch: list[str]) -> None:
    """Fed texts one after another (so parts are remembered from earlier ones), the
    verdict is the whole pass's: clean exactly when redaction changes nothing."""
    for redactor in REDACTORS:
        with remembered_from(length):
            parts = CleanParts(redactor.text)
            for text in batch:
                unchanged = redactor.text(text) == text
                if "-----BEGIN" in text:
                    assert not parts.clean(text)  # left to the whole pass
                else:
                    assert parts.clean(text) is unchanged, text


def test_values_holding_a_joint_character_turn_it_off(tmp_path: Path) -> None:
    assert Redactor(VALUES).values_avoid(JOINT_CHARS)
    assert not Redactor({"A_TOKEN": 'ab"cd1234'}).values_avoid(JOINT_CHARS)
    assert not Redactor({"A_TOKEN": "ab,cd1234"}).values_avoid(JOINT_CHARS)
    quoted = Session(
        mode="record",
        cassette=None,
        traces=tmp_path / "t.jsonl",
        redactor=Redactor({"A_TOKEN": 'ab"cd1234'}),
    )
    plain = Session(mode="record", cassette=None, traces=tmp_path / "u.jsonl")
    assert plain.store.check.parts is not None and quoted.store.check.parts is None
    plain.discard()
    quoted.discard()


# --- whole lines ----------------------------------------------------------------------

contents = texts | st.builds(
    lambda key, value: {key: value},  # a secret named by its key: only the line sees it
    st.sampled_from(["password", "api_key", "note"]),
    texts,
)


@st.composite
def exchanges(draw: st.DrawFn) -> Exchange:
    turns = draw(st.lists(contents, min_size=1, max_size=4))
    messages: list[dict[str, Any]] = []
    for i, content in enumerate(turns):
        if isinstance(content, dict):
            call = {"id": f"call_{i}", "type": "function", "function": {"name": "f"}}
            call["function"]["arguments"] = content  # type: ignore[index]
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        else:
            messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": content})
    body = {"model": "gpt-4o", "messages": messages, "metadata": draw(contents)}
    answer = draw(texts)
    events = [SSEEvent(data=part, t=i / 10) for i, part in enumerate([answer, "[DONE]"])]
    return Exchange(
        provider="openai",
        operation="chat",
        request=get("openai").canonical("/v1/chat/completions", body),
        response=Response(status=200, headers={"x-request-id": draw(texts)}, events=events),
        raw_request=body,
        stream=True,
        start_ns=1,
        end_ns=2,
        trace_id="1af7651916cd43dd8448eb211c80319c",
        span_id=f"{draw(st.integers(1, 2**63)):016x}",
    )


def _line(store: TraceStore, doc: dict[str, Any]) -> bytes | BaseException:
    try:
        line = store.traces_line(doc)
    except Exception as exc:  # a value the line cannot hold fails both ways alike
        return exc
    assert line is not None
    return line


@pytest.mark.parametrize("length", LENGTHS[:1])  # the verdict test covers the rest
@settings(max_examples=30, deadline=None)
@given(st.lists(exchanges(), min_size=1, max_size=5), st.booleans())
def test_line_is_the_whole_pass_line(length: int, calls: list[Exchange], redacted: bool) -> None:
    """For a run of exchanges — redacted by the session's redactor first, as the gateway
    records them, or not — every line is the line the whole-line pass writes."""
    for redactor in REDACTORS:
        with remembered_from(length):
            kwargs: dict[str, Any] = {"redact": redactor.json, "redact_text": redactor.text}
            by_parts = TraceStore(UNWRITTEN, by_parts=True, **kwargs)
            whole = TraceStore(UNWRITTEN, **kwargs)
            assert by_parts.check.parts is not None and whole.check.parts is None
            for ex in calls:
                doc = exchange_to_trace_json(redact_exchange(ex, redactor) if redacted else ex)
                expected = _line(whole, doc)
                got = _line(by_parts, doc)
                if isinstance(expected, BaseException):
                    assert type(got) is type(expected)
                else:
                    assert got == expected


def test_bytes_values_are_redacted_as_the_whole_pass_does(tmp_path: Path) -> None:
    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="x")
    span.attributes.extend(dict_to_attributes({"payload": SECRET.encode(), "n": "x" * 40}))
    doc = codec.to_json(export_request([span]))
    redactor = Redactor()
    kwargs: dict[str, Any] = {"redact": redactor.json, "redact_text": redactor.text}
    by_parts = TraceStore(tmp_path / "p.jsonl", by_parts=True, **kwargs)
    whole = TraceStore(tmp_path / "w.jsonl", **kwargs)
    with remembered_from(1):
        line = by_parts.traces_line(doc)
    assert line == whole.traces_line(doc) and line is not None
    assert base64.b64encode(b"[REDACTED:openai-key]") in line


def test_received_telemetry_is_redacted_whole(tmp_path: Path) -> None:
    """The agent's own spans never take the shortcut, even in a store that has one."""
    redactor = Redactor()
    store = TraceStore(
        tmp_path / "t.jsonl", redact=redactor.json, redact_text=redactor.text, by_parts=True
    )
    assert store.check.parts is not None

    class Trusting(CleanParts):
        def clean(self, text: str) -> bool:
            return True  # were it asked, the secret would pass

    store.check.parts = Trusting(redactor.text)
    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="agent")
    span.attributes.extend(dict_to_attributes({"prompt": f"use {SECRET}"}))
    store.write_traces(export_request([span]))
    store.close()
    text = (tmp_path / "t.jsonl").read_text()
    assert SECRET not in text and "[REDACTED:openai-key]" in text
