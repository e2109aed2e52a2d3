"""The matcher as a table: one request per row, each differing from the base in one
component or only in volatile values; every pair of rows compared. Plus ordering,
exhaustion, known-subset matching, indexing and the ``why`` report."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import threading

import pytest

from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import COMPONENT_LABELS, COMPONENTS, CanonicalRequest
from otel_replay.matching import matcher as m
from otel_replay.matching.matcher import Matcher, component_hash
from otel_replay.matching.normalize import normalize
from otel_replay.matching.why import MAX_DIFF_LINES, explain

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
TIME_TOOL = {
    "type": "function",
    "name": "get_time",
    "description": "Local time in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def text(content):
    return {"type": "text", "content": content}


def chat(
    *,
    endpoint="/v1/chat/completions",
    model="gpt-4o-2024-08-06",
    system_text="You are a travel assistant. Be brief.",
    session="3fa85f64-5717-4562-b3fc-2c963f66afa6",
    started="2024-05-01T12:00:00Z",
    email="alice@example.com",
    request_id="req_011CNs4dwqVQvXa3F8QhC9sd",
    call_ids=("call_Ab12cD34", "call_Ef56gH78"),
    question="What's the weather in Paris and the time in Tokyo?",
    first_city="Paris",
    swap=False,
    tools=(WEATHER_TOOL, TIME_TOOL),
    params=None,
):
    """A realistic multi-turn tool-calling chat in the parts form."""
    weather_id, time_id = call_ids
    messages = [
        {"role": "user", "parts": [text(question)]},
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": weather_id,
                    "name": "get_weather",
                    "arguments": {"city": first_city},
                },
                {
                    "type": "tool_call",
                    "id": time_id,
                    "name": "get_time",
                    "arguments": {"city": "Tokyo"},
                },
            ],
        },
        {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": weather_id,
                    "response": json.dumps({"temp_c": 18, "request_id": request_id}),
                }
            ],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": time_id, "response": "21:04"}],
        },
        {"role": "assistant", "parts": [text("Paris is 18°C; it is 21:04 in Tokyo.")]},
        {"role": "user", "parts": [text(f"Thanks! Email that to {email}.")]},
    ]
    if swap:
        messages[2], messages[3] = messages[3], messages[2]
    return CanonicalRequest(
        endpoint=endpoint,
        model=model,
        system=[text(f"{system_text} Session {session} started {started}.")],
        messages=messages,
        tools=list(tools),
        params=params if params is not None else {"temperature": 0.2, "max_tokens": 512},
    )


# name -> (request, the component this row changes; None: only volatile values differ)
ROWS: dict[str, tuple[CanonicalRequest, str | None]] = {
    "base": (chat(), None),
    "endpoint": (chat(endpoint="/v1/responses"), "endpoint"),
    "model": (chat(model="gpt-4o-mini"), "model"),
    "system": (chat(system_text="You are a pirate travel assistant."), "system"),
    "messages-text": (chat(question="What's the weather in Lyon?"), "messages"),
    "messages-order": (chat(swap=True), "messages"),
    "messages-tool-arg": (chat(first_city="Berlin"), "messages"),
    "tools": (chat(tools=(WEATHER_TOOL,)), "tools"),
    "params": (chat(params={"temperature": 0.9, "max_tokens": 512}), "params"),
    "provider-ids": (chat(request_id="req_01ZZZq9wYYaabbCC11dd"), None),
    "tool-call-ids": (chat(call_ids=("call_Zz99yY88", "call_Qq77pP66")), None),
    "uuid": (chat(session="9b2c1a70-0000-4000-8000-00000000beef"), None),
    "timestamp": (chat(started="2025-01-31T08:15:30.250+01:00"), None),
    "email": (chat(email="bob.smith@example.org"), None),
    "integral-float": (chat(params={"temperature": 0.2, "max_tokens": 512.0}), None),
}

REASON = re.compile(
    r"^(?P<label>[a-z ]+) changed \(hash (?P<was>[0-9a-f]{7})→(?P<now>[0-9a-f]{7})\)$"
)


def expected_component(recorded_row: str, live_row: str) -> str | None:
    """None when the rows should match, else the component the miss must name."""
    a, b = ROWS[recorded_row][1], ROWS[live_row][1]
    if recorded_row == live_row or (a is None and b is None):
        return None
    changed = {a, b} - {None}
    return next(c for c in COMPONENTS if c in changed)


@pytest.mark.parametrize("recorded_row", ROWS)
@pytest.mark.parametrize("live_row", ROWS)
def test_every_pair_of_rows(recorded_row, live_row):
    recorded, live = ROWS[recorded_row][0], ROWS[live_row][0]
    component = expected_component(recorded_row, live_row)
    matcher = Matcher([recorded])
    if component is None:
        assert matcher.match(live) == 0
        assert matcher.used == {0}
        return
    with pytest.raises(ReplayMiss) as caught:
        matcher.match(live)
    miss = caught.value
    assert miss.component == component
    parsed = REASON.match(miss.reason)
    assert parsed, miss.reason
    assert parsed["label"] == COMPONENT_LABELS[component]
    assert parsed["was"] == component_hash(normalize(recorded), component)
    assert parsed["now"] == component_hash(normalize(live), component)
    assert parsed["was"] != parsed["now"]
    assert str(miss) == f"replay miss: {miss.reason}"
    assert matcher.used == set()


def test_component_functions_agree_with_the_table():
    base = normalize(ROWS["base"][0])
    for name, (request, changed) in ROWS.items():
        live = normalize(request)
        for component in COMPONENTS:
            reason = m.COMPARATORS[component](base, live)
            assert (reason is not None) == (component == changed), (name, component)
        assert list(m.differences(base, live)) == ([changed] if changed else [])


def test_named_component_functions():
    base = normalize(chat())
    other = normalize(chat(system_text="Different."))
    assert m.endpoint(base, other) is None
    assert m.model(base, other) is None
    assert m.messages(base, other) is None
    assert m.tools(base, other) is None
    assert m.params(base, other) is None
    assert m.system(base, other).startswith("system prompt changed (hash ")


def test_component_hash_is_sha256_of_canonical_json():
    request = chat()
    blob = json.dumps(request.messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert component_hash(request, "messages") == hashlib.sha256(blob.encode()).hexdigest()[:7]


def test_identical_requests_consume_recordings_in_order_then_run_out():
    matcher = Matcher([chat(), chat()])
    assert matcher.match(chat()) == 0
    assert matcher.unused() == [1]
    assert matcher.match(chat(call_ids=("call_X1", "call_Y2"))) == 1
    with pytest.raises(ReplayMiss) as caught:
        matcher.match(chat())
    assert str(caught.value) == "replay miss: more model calls than the 2 recorded"
    assert caught.value.component is None


def test_equal_recordings_used_up_while_others_remain_is_more_calls():
    matcher = Matcher([chat(), chat(model="gpt-4o-mini")])
    assert matcher.match(chat()) == 0
    with pytest.raises(ReplayMiss, match="more model calls than the 2 recorded"):
        matcher.match(chat())
    assert matcher.match(chat(model="gpt-4o-mini")) == 1


def test_interleaved_recordings_are_taken_by_first_unused_equal():
    a, b = chat(), chat(model="gpt-4o-mini")
    matcher = Matcher([a, b, a])
    assert [matcher.match(a), matcher.match(a), matcher.match(b)] == [0, 2, 1]
    assert matcher.unused() == []


def test_miss_names_the_nearest_unused_recording_ties_to_lowest_index():
    recordings = [
        chat(model="gpt-4o-mini", system_text="Other."),  # two differences
        chat(params={"temperature": 1}),  # one difference: params
        chat(tools=()),  # one difference: tools (a tie; index 1 wins)
    ]
    matcher = Matcher(recordings)
    with pytest.raises(ReplayMiss) as caught:
        matcher.match(chat())
    assert caught.value.component == "params"
    matcher.used.add(1)
    with pytest.raises(ReplayMiss) as caught:
        matcher.match(chat())
    assert caught.value.component == "tools"


def test_empty_cassette_and_append():
    matcher = Matcher([])
    with pytest.raises(ReplayMiss, match="more model calls than the 0 recorded"):
        matcher.match(chat())
    assert matcher.append(chat()) == 0
    assert matcher.append(chat(model="gpt-4o-mini")) == 1
    assert matcher.match(chat(model="gpt-4o-mini")) == 1
    assert matcher.match(chat()) == 0
    assert len(matcher) == 2


def test_nearest_lists_differing_components():
    matcher = Matcher([chat(model="x", tools=()), chat(), chat(system_text="Other.")])
    matcher.match(chat())
    assert matcher.nearest(chat(), k=3) == [(1, []), (2, ["system"]), (0, ["model", "tools"])]
    assert matcher.nearest(chat(), k=1) == [(1, [])]


def test_probe_consumes_nothing():
    matcher = Matcher([chat()])
    assert matcher.probe(chat()) == 0
    assert isinstance(matcher.probe(chat(model="x")), ReplayMiss)
    assert matcher.used == set()


# --- known subsets: recordings rebuilt from traces that did not capture everything --------

TRACE_KNOWN = frozenset({"endpoint", "model", "system", "messages"})


def from_trace(request, params):
    return dataclasses.replace(request, tools=None, params=params, known=TRACE_KNOWN)


def test_unknown_components_are_not_compared():
    matcher = Matcher([from_trace(chat(), {})])
    assert matcher.match(chat(tools=(), params={"temperature": 1.5, "seed": 7})) == 0


def test_partial_params_compare_only_what_the_recording_has():
    recording = from_trace(chat(), {"temperature": 0.2})
    assert Matcher([recording]).match(chat(params={"temperature": 0.2, "top_p": 0.5})) == 0
    with pytest.raises(ReplayMiss) as caught:
        Matcher([recording]).match(chat(params={"temperature": 0.7}))
    assert caught.value.component == "params"
    with pytest.raises(ReplayMiss) as caught:
        Matcher([recording]).match(chat(params={}))  # the recorded param is missing live
    assert caught.value.component == "params"


def test_known_params_must_match_exactly():
    with pytest.raises(ReplayMiss) as caught:
        Matcher([chat()]).match(chat(params={"temperature": 0.2, "max_tokens": 512, "seed": 1}))
    assert caught.value.component == "params"


def test_known_components_still_compared_in_subset_recordings():
    matcher = Matcher([from_trace(chat(), {})])
    with pytest.raises(ReplayMiss) as caught:
        matcher.match(chat(system_text="Changed."))
    assert caught.value.component == "system"


def test_mixed_shapes_pick_the_lowest_unused_index():
    full, partial = chat(), from_trace(chat(), {"temperature": 0.2})
    matcher = Matcher([partial, full, partial])
    assert [matcher.match(chat()) for _ in range(3)] == [0, 1, 2]


# --- scale and threads ------------------------------------------------------------------


def test_hits_do_not_scan_the_recordings(monkeypatch):
    recordings = [chat(question=f"Question number {i}?") for i in range(3000)]
    matcher = Matcher(recordings)

    def no_scan(*args, **kwargs):
        raise AssertionError("a hit must not rank recordings")

    monkeypatch.setattr(Matcher, "_rank", no_scan)
    assert matcher.match(chat(question="Question number 2999?")) == 2999
    assert matcher.match(chat(question="Question number 0?")) == 0


def test_concurrent_matches_take_each_recording_once():
    matcher = Matcher([chat()] * 200)
    taken: list[int] = []
    lock = threading.Lock()

    def worker():
        for _ in range(50):
            index = matcher.match(chat())
            with lock:
                taken.append(index)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == list(range(200))


# --- why -------------------------------------------------------------------------------


def test_explain_shows_the_miss_components_and_a_diff():
    recordings = [chat(), chat(model="gpt-4o-mini")]
    live = chat(system_text="You are a pirate.")
    report = explain(live, recordings, used={1})
    first = report.splitlines()[0]
    assert re.fullmatch(
        r"replay miss: system prompt changed \(hash [0-9a-f]{7}→[0-9a-f]{7}\)", first
    )
    assert "recording #0 (unused)" in report
    assert "recording #1 (used)" in report
    assert re.search(r"system prompt\s+differs\s+[0-9a-f]{7}→[0-9a-f]{7}", report)
    assert re.search(r"messages\s+equal\s+[0-9a-f]{7}", report)
    assert "--- recording #0 system prompt" in report
    assert "+++ live system prompt" in report
    assert any(line.strip().startswith("+") and "pirate" in line for line in report.splitlines())
    assert any(line.strip().startswith("-") and "travel" in line for line in report.splitlines())
    assert "<uuid:1>" in report  # diffs show the normalised form


def test_explain_trims_long_diffs_and_marks_unknown_components():
    extra = [{"role": "user", "parts": [text(f"line {i}")]} for i in range(100)]
    long_live = dataclasses.replace(chat(), messages=chat().messages + extra)
    report = explain(long_live, [from_trace(chat(), {})], k=1)
    assert "more diff lines)" in report
    assert re.search(r"tools\s+not recorded", report)
    diff_lines = [ln for ln in report.splitlines() if ln.startswith("    ")]
    assert len(diff_lines) <= MAX_DIFF_LINES + 2


def test_explain_names_the_params_a_recording_compared_by_name_lacks():
    recording = from_trace(chat(), {"temperature": 0.2})
    live = chat(params={"temperature": 0.7, "tool_choice": "auto", "parallel_tool_calls": False})
    report = explain(live, [recording], k=1)
    assert report.startswith("replay miss: params changed (hash ")
    assert (
        "  params not compared: parallel_tool_calls, tool_choice"
        " (the recording's source did not record them)"
    ) in report.splitlines()
    full = explain(live, [chat()], k=1)  # a recording of the whole body compares every one
    assert "not compared" not in full


def test_explain_for_more_calls_and_empty_cassettes():
    report = explain(chat(), [chat()], used=[0])
    assert report.startswith("replay miss: more model calls than the 1 recorded")
    assert "recording #0 (used)" in report
    assert "differs" not in report
    assert "no recordings" in explain(chat(), [])
    assert explain(chat(), [chat()]).startswith("no miss: the request matches recording #0")


def test_explain_finds_a_change_deep_inside_a_long_prompt():
    long_prompt = "\n".join(f"Rule {i}: be helpful." for i in range(300))
    recorded = chat(system_text=long_prompt)
    live = chat(system_text=long_prompt.replace("Rule 250: be helpful.", "Rule 250: be rude."))
    report = explain(live, [recorded])
    assert any(
        ln.strip().startswith("-") and "Rule 250: be helpful." in ln for ln in report.splitlines()
    )
    assert any(
        ln.strip().startswith("+") and "Rule 250: be rude." in ln for ln in report.splitlines()
    )
