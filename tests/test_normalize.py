"""Normalisation of volatile values: ids, UUIDs, timestamps, emails become numbered
placeholders; everything else, including redaction placeholders, stays as it is."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.core.exchange import CanonicalRequest
from otel_replay.matching.normalize import normalize, normalize_text, normalize_value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "<id:1>"),
        ("msg_01XFDUDYJgAACzvnptvVoYEL", "<id:1>"),
        ("resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b", "<id:1>"),
        ("req_011CNs4dwqVQvXa3F8QhC9sd", "<id:1>"),
        ("fc_67ccd3f0a2f88190a1a3b1c2d3e4f5a6", "<id:1>"),
        ("rs_67ccd3f0a2f88190", "<id:1>"),
        ("run_2x9sD7kLq0", "<id:1>"),
        ("toolu_01A09q90qw90lq917835lq9", "<id:1>"),
        ("srvtoolu_014hJH82Qum7Td6UV8gDXThB", "<id:1>"),
        ("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "<id:1>"),
        ("toolu_bdrk_01Fe4cKTXXRWGAq6uiTJM3pq", "<id:1>"),
        ("msg_bdrk_01Ae9mFJ8ZbS2hBq3Tu4uVmT", "<id:1>"),
        ("call_abc123", "<id:1>"),
        ("3fa85f64-5717-4562-b3fc-2c963f66afa6", "<uuid:1>"),
        ("3FA85F64-5717-4562-B3FC-2C963F66AFA6", "<uuid:1>"),
        ("2024-05-01", "<time:1>"),
        ("2024-05-01T12:30:45Z", "<time:1>"),
        ("2024-05-01T12:30:45.123456+02:00", "<time:1>"),
        ("2024-05-01 12:30", "<time:1>"),
        ("2024-05-01T12:30:45", "<time:1>"),
        ("ada.lovelace+agents@example.co.uk", "<email:1>"),
    ],
)
def test_each_kind_of_volatile_value(text, expected):
    assert normalize_text(text) == expected
    assert normalize_text(f"before ({text}), after") == f"before ({expected}), after"


@pytest.mark.parametrize(
    "text",
    [
        "gpt-4o-2024-08-06",
        "claude-3-5-sonnet-20241022",
        "call_weather",  # a tool name, not an id
        "run_shell and msg_count",
        "2024-13-45",  # not a date
        "version 1.2.3, port 8080, 42 items",
        "[REDACTED:openai-key] [REDACTED:env:msg_TOKEN1]",
        "user at example dot com",
    ],
)
def test_stable_values_are_left_alone(text):
    assert normalize_text(text) == text


def test_same_value_same_placeholder_numbered_per_kind_by_first_occurrence():
    text = "call_b2 call_a1 call_b2 2024-01-01 x@y.io 2024-01-02 2024-01-01 call_a1"
    assert normalize_text(text) == (
        "<id:1> <id:2> <id:1> <time:1> <email:1> <time:2> <time:1> <id:2>"
    )


def _request(**kw):
    base = {
        "endpoint": "/v1/chat/completions",
        "model": "gpt-4o-2024-08-06",
        "system": [{"type": "text", "content": "Today is 2024-05-01."}],
        "messages": [
            {"role": "user", "parts": [{"type": "text", "content": "Mail bob@example.com"}]},
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "id": "call_Xy12",
                        "name": "send_mail",
                        "arguments": {"to": "bob@example.com", "at": "2024-05-02T09:00:00Z"},
                    }
                ],
            },
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": "call_Xy12", "response": "ok"}],
            },
        ],
        "tools": [{"type": "function", "name": "send_mail", "description": "Sends mail."}],
        "params": {"temperature": 1.0, "metadata": {"run": "3fa85f64-5717-4562-b3fc-2c963f66afa6"}},
    }
    base.update(kw)
    return CanonicalRequest(**base)


def test_numbering_runs_across_components_in_order():
    out = normalize(_request())
    assert out.endpoint == "/v1/chat/completions"
    assert out.model == "gpt-4o-2024-08-06"
    assert out.system == [{"type": "text", "content": "Today is <time:1>."}]
    call = out.messages[1]["parts"][0]
    assert call["id"] == "<id:1>"
    assert call["arguments"] == {"at": "<time:2>", "to": "<email:1>"}
    assert out.messages[0]["parts"][0]["content"] == "Mail <email:1>"
    assert out.messages[2]["parts"][0]["id"] == "<id:1>"  # paired with its tool call
    assert out.params == {"temperature": 1, "metadata": {"run": "<uuid:1>"}}
    assert isinstance(out.params["temperature"], int)


def test_input_is_not_mutated_and_normalising_twice_changes_nothing():
    request = _request()
    before = copy.deepcopy(request)
    once = normalize(request)
    assert request == before
    assert normalize(once) == once


def test_numbering_ignores_dict_key_order():
    a = normalize_value({"first": "call_1a", "second": "call_2b"})
    b = normalize_value({"second": "call_2b", "first": "call_1a"})
    assert a == b


def test_tool_call_ids_renamed_consistently_normalise_equal():
    renamed = _request()
    other = _request(
        messages=[
            renamed.messages[0],
            {
                "role": "assistant",
                "parts": [{**renamed.messages[1]["parts"][0], "id": "call_Q9zz"}],
            },
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": "call_Q9zz", "response": "ok"}],
            },
        ]
    )
    assert normalize(other) == normalize(renamed)


def test_unpaired_renaming_does_not_normalise_equal():
    """Renaming only the tool result's id breaks the pairing, and matching must see it."""
    request = _request()
    broken = _request(
        messages=[
            *request.messages[:2],
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": "call_Zz99", "response": "ok"}],
            },
        ]
    )
    assert normalize(broken) != normalize(request)


ids = st.from_regex(r"call_[A-Za-z]{2}[0-9][A-Za-z0-9]{5}", fullmatch=True)
uuids = st.uuids().map(str)
emails = st.from_regex(r"[a-z]{3,8}\.[a-z]{2,6}@[a-z]{3,8}\.(com|org|io)", fullmatch=True)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(ids, min_size=3, max_size=3, unique=True),
    st.lists(ids, min_size=3, max_size=3, unique=True),
    st.tuples(uuids, uuids),
    st.tuples(emails, emails),
)
def test_any_consistent_renaming_normalises_equal(ids_a, ids_b, uuid_pair, email_pair):
    def build(call_ids, uuid, email):
        messages = []
        for call_id in call_ids:
            messages.append(
                {
                    "role": "assistant",
                    "parts": [{"type": "tool_call", "id": call_id, "name": "f", "arguments": {}}],
                }
            )
            messages.append(
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id}]}
            )
        messages.append(
            {"role": "user", "parts": [{"type": "text", "content": f"{email} asked ({uuid})"}]}
        )
        return CanonicalRequest(endpoint="/v1/chat/completions", messages=messages)

    a = build(ids_a, uuid_pair[0], email_pair[0])
    b = build(ids_b, uuid_pair[1], email_pair[1])
    assert normalize(a) == normalize(b)


def test_function_call_ids_a_gemini_client_minted_are_not_compared():
    from otel_replay import providers
    from otel_replay.matching.session_rules import matching_rules

    def turn(call_id: str, provider_path: str) -> CanonicalRequest:
        # what @ai-sdk/google sends after a function call the API gave no id
        body = {
            "contents": [
                {"role": "user", "parts": [{"text": "Paris"}]},
                {"role": "model", "parts": [{"functionCall": {"id": call_id, "name": "w"}}]},
                {
                    "role": "user",
                    "parts": [{"functionResponse": {"id": call_id, "name": "w", "response": {}}}],
                },
            ]
        }
        return providers.provider_for(provider_path, {}).canonical(provider_path, body)

    path = "/v1beta/models/gemini-2.5-flash:generateContent"
    rules = matching_rules()
    one, other = turn("Q7K58nvwbj8P2MtD", path), turn("Ftpdu6rb9cMbpAU8", path)
    assert one.messages != other.messages
    assert rules.normalize(one) == rules.normalize(other)


PIECES = [
    "call_ab12",
    "xcall_ab12",
    "msg_01XFDUDYJgAACzvnptvVoYEL",
    "3fa85f64-5717-4562-b3fc-2c963f66afa6",
    "a3fa85f64-5717-4562-b3fc-2c963f66afa6",
    "2024-05-01T12:30:45Z",
    "x2024-05-01",
    "_2024-05-01",
    "30 November 2026",
    "Nov 30, 2026",
    "aMay 2026",
    "1764000000",
    "a1764000000123",
    "ada@example.org",
    "b.ada@example.org",
    "<id:1>",
    "x<cwd>",
    "[REDACTED:API_KEY]",
    "w" * 21,
    "é",
    "’",
    "٢٠٢٤-05-01",  # digits the standard library's \d takes, and RE2's does not
    "30\xa0November\u20032026",  # spaces beyond ASCII
    "１７６４０００００００",
    "合計 €",
    " ",
    "\n",
    "-",
    ".",
    "0",
]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=12).map("".join),
    st.lists(st.tuples(st.integers(0, 6), st.booleans()), max_size=4),
)
def test_word_start_rules_behind_one_look_behind_match_as_the_plain_alternation(text, extra):
    """The compiled rules try the rules that match only where a word starts behind one
    look-behind (``normalize.alternation``): the same branch matches in the same place as
    in the plain alternation, whatever rules of either sort surround them."""
    import re

    from otel_replay.matching.alternation import alternation
    from otel_replay.matching.normalize import DEFAULT

    branches = list(DEFAULT.default_set().branches)
    for at, word_start in extra:  # another rule, gated or not, at some place among them
        pattern = r"(?<![A-Za-z0-9])w{21}" if word_start else r"[0-9]-"
        branches.insert(at % (len(branches) + 1), ("extra", pattern, word_start))
    gated, plain = (re.compile(alternation(branches, gated=g)) for g in (True, False))
    assert [(m.lastgroup, m.span()) for m in gated.finditer(text)] == [
        (m.lastgroup, m.span()) for m in plain.finditer(text)
    ]


def test_every_word_start_rule_opens_with_a_look_behind_refusing_letters_and_digits():
    """What ``word_start`` promises, read off each built-in rule's parsed pattern: its
    first step, after a look-ahead at the same place, is a look-behind refusing every
    ASCII letter and digit (a pattern that is a choice at its top starts with the choice)."""
    import string
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    from otel_replay.matching.rules import BUILTIN_RULES, VolatileRule

    def refused(items: list[tuple[object, object]]) -> set[str]:
        out: set[str] = set()
        for op, av in items:
            if op is c.LITERAL:
                out.add(chr(av))  # type: ignore[arg-type]
            elif op is c.RANGE:
                low, high = av  # type: ignore[misc]
                out.update(map(chr, range(low, high + 1)))
            else:  # a negated or other class: no promise read from it
                return set()
        return out

    marked = [r for r in BUILTIN_RULES if isinstance(r, VolatileRule) and r.word_start]
    assert len(marked) >= 6
    for rule in marked:
        steps = list(_parser.parse(rule.pattern))
        while steps and steps[0][0] is c.ASSERT and steps[0][1][0] == 1:  # look-ahead
            steps.pop(0)
        op, (direction, inner) = steps[0]
        assert op is c.ASSERT_NOT and direction == -1, rule.pattern
        (kind, items), *rest = list(inner)
        assert kind is c.IN and not rest, rule.pattern
        assert set(string.ascii_letters + string.digits) <= refused(items), rule.pattern


@settings(max_examples=70, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=40).map("".join),
    st.integers(1, 12),
    st.lists(st.tuples(st.integers(0, 6), st.booleans()), max_size=3),
)
def test_the_places_re2_finds_replace_as_the_standard_library_does(text, times, extra):
    """``Substitution`` tries the rules only where RE2 finds them relaxed: the same
    matches are replaced as ``re.sub`` replaces them, long texts and short, ASCII or
    not, whatever rules of either sort the table holds."""
    import re

    from otel_replay.matching.alternation import Substitution, alternation
    from otel_replay.matching.normalize import DEFAULT

    branches = list(DEFAULT.default_set().branches)
    for at, word_start in extra:
        pattern = r"(?<![A-Za-z0-9])w{21}(?=[^(\]])" if word_start else r"[0-9]-(?!x)"
        branches.insert(at % (len(branches) + 1), ("extra", pattern, word_start))
    regex = re.compile(alternation(branches))
    substitution = Substitution(regex)
    assert substitution._find is not None  # the fast path, not the fallback, is held

    def replace(m: re.Match[str]) -> str:
        return f"<{m.lastgroup}:{m.group()}>"

    long = text * times
    assert substitution(replace, long) == regex.sub(replace, long)
    assert substitution(replace, text) == regex.sub(replace, text)


@pytest.mark.parametrize(
    ("pattern", "wide"),
    [
        (r"(?<![A-Za-z0-9])(?:ab|c(?=d))", r"(?:ab|c)"),
        (r"a(?!\))b\(c(?<=x[(\]])", r"ab\(c"),
        (r"[(?=x)]y(?=(?:z|(w)))q", r"[(?=x)]yq"),
        (r"[]x(](?<!k)m", r"[]x(]m"),
        (r"^\bk\d$", r"k[0-9\x{80}-\x{10FFFF}]"),
        (r"[\s.][^\w]\W", r"[\t\n\v\f\r \x1c-\x1f\x{80}-\x{10FFFF}.][^\w]\W"),
        (r"[^](]n(?=o", None),  # an unclosed look-ahead
        (r"(?i)abc", None),  # flags
        (r"a{,3}", None),  # a repetition to the standard library, text to RE2
    ],
)
def test_a_pattern_relaxed_for_re2_keeps_every_place_it_matches(pattern, wide):
    from otel_replay.matching.alternation import relaxed

    assert relaxed(pattern) == wide


def test_a_place_refused_by_a_look_around_is_followed_by_the_next_one():
    """RE2 finds a place the look-around refuses: the next place is tried next."""
    import re

    from otel_replay.matching.alternation import Substitution

    regex = re.compile(r"a(?=c)|b|(?<=c)d")
    text = "ab" * 150 + "cd" + "ac" * 10
    found = Substitution(regex)(lambda m: f"<{m.group()}>", text)
    assert found == regex.sub(lambda m: f"<{m.group()}>", text)
    assert found.count("<b>") == 150 and found.count("<d>") == 1 and found.count("<a>") == 10


@pytest.mark.parametrize(
    "piece", [" ٢٠٢٤-05-01 ", " 30\xa0November\u20032026 ", " ２０２４-05-01 ", " é@ex.org "]
)
def test_digits_and_spaces_beyond_ascii_are_found_as_the_standard_library_finds_them(piece):
    """The standard library's \\d and \\s take digits and spaces beyond ASCII, RE2's do not:
    the relaxed pattern takes them too, so no match of the rules is passed over."""
    import re

    from otel_replay.matching.alternation import Substitution, alternation
    from otel_replay.matching.normalize import DEFAULT

    regex = re.compile(alternation(list(DEFAULT.default_set().branches)))
    text = piece * 40

    def replace(m: re.Match[str]) -> str:
        return f"<{m.lastgroup}>"

    expected = regex.sub(replace, text)
    assert Substitution(regex)(replace, text) == expected
    assert expected != text or "@" in piece  # the rules do match the first three


def test_a_pattern_matching_empty_text_is_replaced_as_the_standard_library_does():
    """An empty match leaves the whole text to ``re.sub``, with no replacement made
    before it (the rules number what they replace, in order)."""
    import re

    from otel_replay.matching.alternation import Substitution

    regex = re.compile(r"a|x(?=b)|(?=c)")
    text = "aaxb" * 80 + "c"
    calls: list[list[str]] = [[], []]

    def replacing(into: list[str]):
        return lambda m: into.append(m.group()) or f"<{len(into)}>"

    assert Substitution(regex)(replacing(calls[0]), text) == regex.sub(replacing(calls[1]), text)
    assert calls[0] == calls[1] and len(calls[0]) == 3 * 80 + 1
