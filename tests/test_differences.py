"""Where a live request differs from a recording: ``differences`` gives paths into the
compared projections, and a miss carries them."""

from __future__ import annotations

import dataclasses

import pytest

from otel_replay.core.exchange import COMPONENTS, CanonicalRequest
from otel_replay.matching.diff import MISSING, Difference, differences
from otel_replay.matching.matcher import Matcher, MatchMiss
from otel_replay.matching.matcher import differences as reasons
from otel_replay.matching.normalize import normalize
from otel_replay.matching.projection import SKIPPED, compare, key, project, shape


def text(content):
    return {"type": "text", "content": content}


BASE = CanonicalRequest(
    endpoint="/v1/chat/completions",
    model="gpt-4o",
    system=[text("Be brief.")],
    messages=[
        {"role": "user", "parts": [text("hi")]},
        {"role": "assistant", "parts": [text("hello")]},
        {"role": "user", "parts": [text("weather?")]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_a1", "name": "w"}]},
    ],
    tools=[{"type": "function", "name": "w", "description": "Weather."}],
    params={"temperature": 0.2, "max_tokens": 100},
)


def _message(i, content):
    messages = [dict(m) for m in BASE.messages]
    messages[i] = {**messages[i], "parts": [text(content)]}
    return messages


# name -> (live, expected differences)
ROWS = {
    "equal": (BASE, []),
    "volatile only": (
        dataclasses.replace(
            BASE,
            messages=[
                *BASE.messages[:3],
                {
                    "role": "assistant",
                    "parts": [{"type": "tool_call", "id": "call_z9", "name": "w"}],
                },
            ],
        ),
        [],
    ),
    "endpoint": (
        dataclasses.replace(BASE, endpoint="/v1/responses"),
        [Difference("endpoint", "endpoint", "/v1/chat/completions", "/v1/responses")],
    ),
    "model": (
        dataclasses.replace(BASE, model="gpt-4o-mini"),
        [Difference("model", "model", "gpt-4o", "gpt-4o-mini")],
    ),
    "system text": (
        dataclasses.replace(BASE, system=[text("Be long.")]),
        [Difference("system", "system[0].content", "Be brief.", "Be long.")],
    ),
    "one message": (
        dataclasses.replace(BASE, messages=_message(2, "rain?")),
        [Difference("messages", "messages[2].parts[0].content", "weather?", "rain?")],
    ),
    "a message more": (
        dataclasses.replace(BASE, messages=[*BASE.messages, {"role": "user", "parts": []}]),
        [Difference("messages", "messages[4]", MISSING, {"role": "user", "parts": []})],
    ),
    "a param changed and one added": (
        dataclasses.replace(BASE, params={"temperature": 0.7, "max_tokens": 100, "seed": 1}),
        [
            Difference("params", "params.seed", MISSING, 1),
            Difference("params", "params.temperature", 0.2, 0.7),
        ],
    ),
    "a tool removed, odd key": (
        dataclasses.replace(BASE, tools=[{"type": "function", "name": "w", "a b": 1}]),
        [
            Difference("tools", 'tools[0]["a b"]', MISSING, 1),
            Difference("tools", "tools[0].description", "Weather.", MISSING),
        ],
    ),
    "two components": (
        dataclasses.replace(BASE, model="m2", params={"temperature": 1, "max_tokens": 100}),
        [
            Difference("model", "model", "gpt-4o", "m2"),
            Difference("params", "params.temperature", 0.2, 1),
        ],
    ),
    "true is not 1": (
        dataclasses.replace(BASE, params={"temperature": 0.2, "max_tokens": True}),
        [Difference("params", "params.max_tokens", 100, True)],
    ),
}


@pytest.mark.parametrize("name", ROWS)
def test_difference_paths(name):
    live, expected = ROWS[name]
    found = differences(normalize(BASE), normalize(live))
    assert found == expected
    # the components named are exactly those the miss reasons name, in the same order
    components = list(dict.fromkeys(d.component for d in found))
    assert components == list(reasons(normalize(BASE), normalize(live)))


def test_only_known_components_and_recorded_params_are_compared():
    partial = dataclasses.replace(
        BASE, params={"temperature": 0.2}, known=frozenset({"endpoint", "model", "messages"})
    )
    live = dataclasses.replace(
        BASE, system=[text("other")], tools=None, params={"temperature": 0.5, "seed": 3}
    )
    assert differences(normalize(partial), normalize(live)) == [
        Difference("params", "params.temperature", 0.2, 0.5)
    ]


def test_projection_is_the_one_source_of_keys_and_comparisons():
    partial = dataclasses.replace(BASE, params={"seed": 1}, known=frozenset({"model"}))
    of = shape(partial)
    assert project(of, BASE, "system") is SKIPPED
    assert project(of, BASE, "params") == {"seed": None}
    assert project(of, BASE, "model") == "gpt-4o"
    recorded, live = key(of, partial, {}), key(of, BASE, {})
    for i, name in enumerate(COMPONENTS):
        compared = compare(partial, BASE, name)
        assert (recorded[i] == live[i]) == (not compared.recorded or compared.equal), name
        assert compared.reason() is None or name == "params"


def test_a_miss_carries_its_recording_and_differences():
    matcher = Matcher([BASE, dataclasses.replace(BASE, model="other")])
    with pytest.raises(MatchMiss) as caught:
        matcher.match(dataclasses.replace(BASE, messages=_message(0, "hey")))
    miss = caught.value
    assert miss.component == "messages" and miss.recording == 0
    assert str(miss).startswith("replay miss: messages changed (hash ")
    assert miss.differences == [Difference("messages", "messages[0].parts[0].content", "hi", "hey")]
