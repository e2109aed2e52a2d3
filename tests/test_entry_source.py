"""A run's entry read from its spans (``readers.entry``), and the test written from it
(``pipeline.testsource``): projections as a table, the collector's choices and errors,
and the test's text — valid Python, as ``ruff format`` writes it, its values read back
exactly."""

from __future__ import annotations

import ast
import json
import subprocess
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from ruff.__main__ import find_ruff_bin

from otel_replay.core.errors import ConfigError
from otel_replay.core.exchange import CanonicalRequest, Exchange, Response
from otel_replay.pipeline.testsource import (
    EntryPoint,
    cassette_reference,
    parse_entry,
    render_test,
)
from otel_replay.readers.entry import Call, Entry, EntrySpans, span_input, span_output

TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
QUESTION = "What is the weather in Paris?"
ANSWER = "sunny, 21 C"


def _parts(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


INPUTS: list[tuple[str, dict[str, Any], Call | None]] = [
    ("openinference text", {"input.value": QUESTION}, Call((QUESTION,))),
    (
        "openinference arguments",
        {"input.value": '{"city": "Paris", "days": 3}', "input.mime_type": "application/json"},
        Call(kwargs={"city": "Paris", "days": 3}),
    ),
    (
        "openinference one JSON value",
        {"input.value": '["Paris", "Rome"]', "input.mime_type": "application/json"},
        Call((["Paris", "Rome"],)),
    ),
    ("openinference hidden", {"input.value": "__REDACTED__"}, None),
    (
        "openllmetry workflow",
        {"traceloop.entity.input": '{"args": ["Paris"], "kwargs": {"days": 3}}'},
        Call(("Paris",), {"days": 3}),
    ),
    (
        "openllmetry langchain chain",
        {"traceloop.entity.input": '{"inputs": {"question": "Paris?"}, "tags": [], "kwargs": {}}'},
        Call(kwargs={"question": "Paris?"}),
    ),
    (
        "genai messages: the first user message",
        {
            "gen_ai.input.messages": json.dumps(
                [
                    {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
                    {"role": "user", "parts": [{"type": "text", "content": QUESTION}]},
                    {"role": "user", "parts": [{"type": "text", "content": "later"}]},
                ]
            )
        },
        Call((QUESTION,)),
    ),
    ("genai content left out", {"gen_ai.input.messages": '[{"role": "user", "parts": []}]'}, None),
    (
        "pydantic-ai run: the run's first user message",
        {
            "pydantic_ai.all_messages": json.dumps(
                [
                    {"role": "user", "parts": [{"type": "text", "content": "earlier"}]},
                    {"role": "user", "parts": [{"type": "text", "content": QUESTION}]},
                ]
            ),
            "pydantic_ai.new_message_index": 1,
        },
        Call((QUESTION,)),
    ),
    ("nothing", {"http.method": "POST"}, None),
]

OUTPUTS: list[tuple[str, dict[str, Any], Any]] = [
    ("openinference text", {"output.value": ANSWER}, ANSWER),
    (
        "openinference JSON",
        {"output.value": '{"t": 21}', "output.mime_type": "application/json"},
        {"t": 21},
    ),
    ("openllmetry workflow", {"traceloop.entity.output": '"sunny"'}, "sunny"),
    (
        "openllmetry langchain chain",
        {"traceloop.entity.output": '{"outputs": "sunny", "kwargs": {"tags": []}}'},
        "sunny",
    ),
    ("pydantic-ai text", {"final_result": ANSWER}, ANSWER),
    ("pydantic-ai structured", {"final_result": '{"t": 21}'}, {"t": 21}),
    ("genai: the last message", {"gen_ai.output.messages": _parts("assistant", ANSWER)}, ANSWER),
    ("openinference hidden", {"output.value": "__REDACTED__"}, None),
]


@pytest.mark.parametrize(("attrs", "call"), [r[1:] for r in INPUTS], ids=[r[0] for r in INPUTS])
def test_the_call_each_attribute_group_records(attrs, call):
    assert span_input(attrs) == call


@pytest.mark.parametrize(("attrs", "out"), [r[1:] for r in OUTPUTS], ids=[r[0] for r in OUTPUTS])
def test_the_output_each_attribute_group_records(attrs, out):
    assert span_output(attrs) == out


# --- the collector ---------------------------------------------------------------------


def _span(span_id: int, parent: int | None, name: str, start: int, trace: bytes = TRACE) -> Span:
    return Span(
        trace_id=trace,
        span_id=span_id.to_bytes(8, "big"),
        parent_span_id=parent.to_bytes(8, "big") if parent else b"",
        name=name,
        start_time_unix_nano=start,
    )


def _call(span: Span, user: str, answer: str) -> Exchange:
    request = CanonicalRequest(
        endpoint="/v1/chat/completions",
        model="gpt-4o-mini",
        messages=[{"role": "user", "parts": [{"type": "text", "content": user}]}],
    )
    message = {"role": "assistant", "content": answer}
    body = {"id": "c", "object": "chat.completion", "model": "gpt-4o-mini"}
    body["choices"] = [{"index": 0, "message": message, "finish_reason": "stop"}]
    return Exchange(
        "openai",
        "chat",
        request,
        Response(200, body=body),
        start_ns=span.start_time_unix_nano,
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
    )


LLM = {"openinference.span.kind": "LLM"}


def _calls(entries: EntrySpans, parent: int, trace: bytes = TRACE) -> None:
    """Two model calls under ``parent``: the question, then the answer after a tool."""
    for number, (user, answer) in enumerate([(QUESTION, ""), (QUESTION, ANSWER)], start=10):
        span = _span(number, parent, "ChatCompletion", number, trace)
        entries.add(span, LLM, "openinference.instrumentation.openai", _call(span, user, answer))


def test_the_root_span_records_the_run():
    entries = EntrySpans()
    _calls(entries, parent=1)
    root = {"openinference.span.kind": "AGENT", "input.value": "Lisbon?", "output.value": "warm"}
    entries.add(_span(1, None, "answer", 1), root, "weather_agent", None)
    assert entries.entry() == Entry(TRACE.hex(), "answer", Call(("Lisbon?",)), "warm")


def test_an_agent_span_without_content_stands_for_its_model_calls():
    entries = EntrySpans()  # the OpenAI Agents SDK's workflow span, as OpenInference writes it
    entries.add(
        _span(1, None, "Agent workflow", 1), {"openinference.span.kind": "AGENT"}, "x", None
    )
    _calls(entries, parent=1)
    assert entries.entry() == Entry(TRACE.hex(), "Agent workflow", Call((QUESTION,)), ANSWER)


def test_a_model_call_as_root_is_its_own_run():
    entries = EntrySpans()
    span = _span(1, None, "chat gpt-4o-mini", 1)
    entries.add(span, {"gen_ai.operation.name": "chat"}, "x", _call(span, QUESTION, ANSWER))
    assert entries.entry() == Entry(TRACE.hex(), "chat gpt-4o-mini", Call((QUESTION,)), ANSWER)


def test_a_web_request_root_gives_way_to_the_agent_span_beneath():
    entries = EntrySpans()
    entries.add(_span(1, None, "POST /ask", 1), {"http.request.method": "POST"}, "x", None)
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}
    agent |= {"gen_ai.input.messages": _parts("user", QUESTION)}
    agent |= {"gen_ai.output.messages": _parts("assistant", ANSWER)}
    entries.add(_span(2, 1, "invoke_agent weather", 2), agent, "x", None)
    _calls(entries, parent=2)
    assert entries.entry().span_name == "invoke_agent weather"


def test_a_withheld_input_is_said_with_the_setting_that_records_it():
    entries = EntrySpans()
    root = {"openinference.span.kind": "AGENT", "input.value": "__REDACTED__"}
    entries.add(_span(1, None, "answer", 1), root | {"output.value": "warm"}, "x", None)
    _calls(entries, parent=1)
    with pytest.raises(ConfigError) as caught:
        entries.entry()
    message = str(caught.value)
    assert f"the root span 'answer' of trace {TRACE.hex()} has no usable input" in message
    assert "its input was not recorded: unset OPENINFERENCE_HIDE_INPUTS" in message


def test_several_runs_ask_for_one_and_none_says_so():
    entries = EntrySpans()
    with pytest.raises(ConfigError, match="no model call in the traces read"):
        entries.entry()
    other = bytes.fromhex("1" * 32)
    for trace in (TRACE, other):
        entries.add(
            _span(1, None, "run", 1, trace), {"openinference.span.kind": "AGENT"}, "x", None
        )
        _calls(entries, parent=1, trace=trace)
    with pytest.raises(ConfigError, match=r"hold 2 runs .* choose its trace with --trace-id"):
        entries.entry()


def test_what_the_entry_gives_is_redacted():
    entries = EntrySpans(lambda value: json.loads(json.dumps(value).replace("Paris", "[X]")))
    _calls(entries, parent=1)
    entries.add(
        _span(1, None, "a", 1), {"input.value": "Paris?", "output.value": "Paris"}, "x", None
    )
    assert entries.entry() == Entry(TRACE.hex(), "a", Call(("[X]?",)), "[X]")


# --- the test's text -------------------------------------------------------------------

POINT = EntryPoint("weather_agent", "answer")


def _render(call: Call, output: Any, cassette: str | None = None) -> str:
    entry = Entry(TRACE.hex(), "answer", call, output)
    return render_test(entry, POINT, cassette, "incident", "traces.jsonl")


def _ruff_formatted(text: str) -> str:
    done = subprocess.run(
        [find_ruff_bin(), "format", "--isolated", "--stdin-filename", "test_incident.py", "-"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _constants(text: str) -> dict[str, Any]:
    tree = ast.parse(text)
    return {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
        if node.targets[0].id in ("PROMPT", "EXPECTED")
    }


def test_a_test_reads_as_written_by_hand():
    text = _render(Call((QUESTION,)), ANSWER)
    assert text == _ruff_formatted(text)
    assert f"# From trace {TRACE.hex()} in traces.jsonl (root span 'answer')" in text
    assert "from weather_agent import answer\n" in text
    assert f'PROMPT = "{QUESTION}"\nEXPECTED = "{ANSWER}"\n' in text
    assert text.endswith(
        "def test_answer_as_recorded(otel_replay):\n"
        '    with otel_replay("incident", mode="strict"):\n'
        "        result = answer(PROMPT)\n"
        "    assert result == EXPECTED\n"
    )


def test_long_values_and_keyword_arguments_are_laid_out_as_ruff_does():
    prompt = "Plan a week in Paris. " * 12 + "\nThen list what to pack, and why it matters."
    expected = {
        "days": [{"day": n, "plan": "museums and a long walk by the river"} for n in range(3)]
    }
    for call in (Call((prompt,)), Call(kwargs={"city": "Paris", "notes": prompt})):
        text = _render(call, expected)
        assert text == _ruff_formatted(text)
        assert all(len(line) <= 88 for line in text.splitlines())
        assert _constants(text)["EXPECTED"] == expected
    assert _constants(_render(Call((prompt,)), expected))["PROMPT"] == prompt


def test_a_cassette_elsewhere_is_named_by_its_path_from_the_test():
    text = _render(Call((QUESTION,)), ANSWER, cassette="../fixtures/incident-42.json")
    assert text == _ruff_formatted(text)
    assert 'CASSETTE = Path(__file__).parent / "../fixtures/incident-42.json"' in text
    assert 'with otel_replay(CASSETTE, mode="strict"):' in text
    from pathlib import PurePosixPath

    assert cassette_reference(PurePosixPath("cassettes/incident.json"), "/a") is None
    assert cassette_reference(PurePosixPath("cassettes/x/y.json"), "/a") == "cassettes/x/y.json"
    assert cassette_reference(None, "/abs/incident.json") == "/abs/incident.json"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=120),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=25, deadline=None)
@given(prompt=st.text(min_size=1, max_size=300), output=json_values)
def test_the_values_read_back_exactly(prompt, output):
    constants = _constants(_render(Call((prompt,)), output))
    assert constants == {"PROMPT": prompt, "EXPECTED": output}


@pytest.mark.parametrize(
    ("text", "point"),
    [
        ("weather_agent:answer", EntryPoint("weather_agent", "answer")),
        ("app.agents.weather:Agent.run", EntryPoint("app.agents.weather", "Agent.run")),
    ],
)
def test_an_entry_point_is_module_colon_function(text, point):
    assert parse_entry(text) == point


@pytest.mark.parametrize("text", ["agent.py", "agent:", ":answer", "agent:class", "a-b:c"])
def test_a_malformed_entry_point_says_the_form(text):
    with pytest.raises(ConfigError, match="give MODULE:FUNCTION"):
        parse_entry(text)
