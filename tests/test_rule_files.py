"""Rule files, agent profiles and the built-in volatility, as tables: each rule kind hits,
still misses what it should, numbers across turns, reaches into JSON carried as a string,
respects its scope and its precedence; a bad file is one line naming file, line and rule."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import CanonicalRequest
from otel_replay.frontends.rulefiles import find_rule_file, rule_sources
from otel_replay.matching.matcher import Matcher, MatchMiss
from otel_replay.matching.normalize import Normalizer
from otel_replay.matching.profiles import (
    PROFILES,
    profiles_seen,
    recorded_places,
    recorded_rules,
)
from otel_replay.matching.rulefile import RuleFile, RuleFileError, parse_rules, to_toml
from otel_replay.matching.rules import epoch_rule, integer_range_pattern
from otel_replay.matching.session_rules import matching_rules
from otel_replay.matching.sources import RuleSources
from otel_replay.matching.suggest import generated_pattern, looks_generated, suggest

ROOT = Path(__file__).resolve().parent.parent
NOW_MS = int(time.time() * 1000)


def chat(text: str = "hi", *, model: str = "gpt-4o-mini", **params) -> CanonicalRequest:
    return CanonicalRequest(
        endpoint="/v1/chat/completions",
        model=model,
        messages=[{"role": "user", "parts": [{"type": "text", "content": text}]}],
        params=params,
    )


def rules(text: str) -> RuleSources:
    return RuleSources((parse_rules(text, "otel-replay.toml")[0],))


def hits(sources: RuleSources, recorded: CanonicalRequest, live: CanonicalRequest) -> bool:
    try:
        Matcher([recorded], normalizer=matching_rules(sources)).match(live)
    except ReplayMiss:
        return False
    return True


ORDER = '[[volatile]]\nkind = "order"\npattern = "ORD-[0-9]{6}"\n'
RUN = '[[ignore]]\npath = "params.metadata.run_*"\n'
INNER = '[[ignore]]\npath = "params.meta.turn.started"\n'
SCOPED = '[[ignore]]\npath = "params.metadata"\nmodel = "gpt-4o*"\n'
NUMBERS = '[[volatile]]\nkind = "build"\npattern = "[0-9]{9}"\nnumbers = true\n'


def turn(started: int, turn_id: str = "a") -> str:
    return json.dumps({"turn": {"started": started, "id": turn_id}})


# name -> (rule file, recorded, live, hits?)
ROWS = {
    "volatile: hits": (ORDER, chat("ship ORD-123456"), chat("ship ORD-654321"), True),
    "volatile: other text misses": (ORDER, chat("ship ORD-123456"), chat("ship ORD-12345"), False),
    "volatile: without the rule a changed order number misses": (
        "",
        chat("ship ORD-123456"),
        chat("ship ORD-654321"),
        False,
    ),
    "ignore with a wildcard: hits": (
        RUN,
        chat(metadata={"run_started": "a1", "team": "x"}),
        chat(metadata={"run_started": "b2", "team": "x"}),
        True,
    ),
    "ignore: the rest still counts": (
        RUN,
        chat(metadata={"run_started": "a1", "team": "x"}),
        chat(metadata={"run_started": "a1", "team": "y"}),
        False,
    ),
    "ignore into a JSON string: hits": (INNER, chat(meta=turn(1)), chat(meta=turn(2)), True),
    "ignore into a JSON string: the rest counts": (
        INNER,
        chat(meta=turn(1)),
        chat(meta=turn(1, "b")),
        False,
    ),
    "scope: in scope hits": (SCOPED, chat(metadata={"x": 1}), chat(metadata={"x": 2}), True),
    "scope: out of scope misses": (
        SCOPED,
        chat(model="o3", metadata={"x": 1}),
        chat(model="o3", metadata={"x": 2}),
        False,
    ),
    "volatile numbers: hits": (NUMBERS, chat(build=123456789), chat(build=987654321), True),
    "volatile numbers: other numbers count": (NUMBERS, chat(build=12), chat(build=13), False),
    "builtin epoch ms as a number": ("", chat(at=NOW_MS), chat(at=NOW_MS + 5000), True),
    "builtin epoch s in text": (
        "",
        chat(f"now {NOW_MS // 1000}"),
        chat(f"now {NOW_MS // 1000 + 9}"),
        True,
    ),
    "builtin: an order number is not a time": ("", chat(n=123456), chat(n=123457), False),
    "builtin: a number far from now is not a time": (
        "",
        chat(n=1_000_000_000),
        chat(n=1_000_000_001),
        False,
    ),
    "builtin prose month": (
        "",
        chat("The current month is November 2026."),
        chat("The current month is December 2026."),
        True,
    ),
    "builtin prose dates": (
        "",
        chat("due 30 November 2026 or Nov 30, 2026"),
        chat("due 1 December 2026 or Dec 1, 2026"),
        True,
    ),
    "builtin prose date: the sentence still counts": (
        "",
        chat("The current month is November 2026."),
        chat("The last month was November 2026."),
        False,
    ),
}


@pytest.mark.parametrize("name", ROWS)
def test_rule_file_rows(name):
    text, recorded, live, expected = ROWS[name]
    assert hits(rules(text), recorded, live) is expected


def test_placeholders_are_numbered_across_turns():
    engine = matching_rules(rules(ORDER))
    first = engine.normalize(chat("ORD-000001 then ORD-000002 then ORD-000001"))
    assert first.messages[0]["parts"][0]["content"] == "<order:1> then <order:2> then <order:1>"
    assert engine.normalize(first) == first  # placeholders pass through


def test_precedence_a_later_file_wins_at_one_position():
    low = parse_rules('[[volatile]]\nkind = "code"\npattern = "[A-Z]-[0-9]+"\n', "a.toml")[0]
    high = parse_rules('[[volatile]]\nkind = "ticket"\npattern = "T-[0-9]+"\n', "b.toml")[0]
    for files, expected in (((low, high), "<ticket:1>"), ((high, low), "<code:1>")):
        engine = matching_rules(RuleSources(files))
        assert engine.normalize(chat("T-42")).messages[0]["parts"][0]["content"] == expected


def test_recorded_rules_sit_below_the_users_files():
    user = parse_rules(ORDER, "otel-replay.toml")[0]
    sources = RuleSources((user,)).with_recorded(parse_rules(RUN, "c.json")[0])
    assert [f.origin for f in sources.files] == ["c.json", "otel-replay.toml"]
    form = sources.recorded_form([chat()])
    assert form is not None and form["profiles"] == []
    again = recorded_rules({"rules": form}, "c.json")
    assert again is not None and again.rules == sources.user_rules()
    assert RuleSources().recorded_form([chat()]) is None  # nothing in force: nothing recorded


CLAUDE_ID = '{"device_id": "%s", "account_uuid": "", "session_id": "%s"}'


def claude(device: str, session: str, text: str = "hi") -> CanonicalRequest:
    user_id = CLAUDE_ID % (device, session)
    request = chat(text, model="claude-sonnet-4-5", metadata={"user_id": user_id})
    return dataclasses.replace(request, endpoint="/v1/messages")


def codex(started: int, text: str = "fix it") -> CanonicalRequest:
    meta = json.dumps({"turn_id": "t", "turn_started_at_unix_ms": started})
    return chat(text, client_metadata={"x-codex-turn-metadata": meta})


def test_profiles_are_chosen_from_the_request_shape():
    assert profiles_seen(PROFILES, [claude("a" * 64, "s")]) == ["claude-code"]
    assert profiles_seen(PROFILES, [codex(1)]) == ["codex"]
    assert profiles_seen(PROFILES, [chat()]) == []


@pytest.mark.parametrize(
    ("recorded", "live", "expected"),
    [
        (claude("a" * 64, "s1"), claude("b" * 64, "s2"), True),
        (claude("a" * 64, "s1"), claude("b" * 64, "s2", "bye"), False),
        (codex(5), codex(6), True),  # a turn start far from now: only the profile hides it
        (codex(5), codex(6, "fix that"), False),
    ],
)
def test_profiles_neutralise_their_agents_volatile_fields(recorded, live, expected):
    assert hits(RuleSources(), recorded, live) is expected
    if expected:  # the profile, not a built-in rule, makes it hit
        assert not hits(RuleSources(profiles=()), recorded, live)


def test_a_rule_scoped_to_a_profile_applies_only_under_it():
    scoped = rules('[[ignore]]\npath = "messages"\nprofile = "codex"\n')
    assert hits(scoped, codex(1, "a"), codex(1, "b"))
    assert not hits(scoped, chat("a"), chat("b"))


def test_working_and_home_directories_become_placeholders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path.parent))
    engine = Normalizer()
    out = engine.text(f"read {tmp_path}/a.py and {tmp_path.parent}/x and {tmp_path}x")
    assert out == f"read <cwd>/a.py and <home>/x and <home>/{tmp_path.name}x"
    other = tmp_path / "sub"
    other.mkdir()
    monkeypatch.chdir(other)
    assert engine.text(f"read {other}/a.py") == "read <cwd>/a.py"


def test_live_rules_are_a_predicate():
    engine = matching_rules(rules('[[live]]\nmodel = "gpt-4o-realtime*"\n'))
    assert engine.is_live(chat(model="gpt-4o-realtime-preview"))
    assert not engine.is_live(chat(model="gpt-4o-mini"))
    assert not matching_rules().is_live(chat())


def test_a_session_sends_live_requests_to_the_provider_only_in_auto_mode(tmp_path):
    from otel_replay.session.session import Session

    sources = rules('[[live]]\nmodel = "gpt-4o-realtime*"\n')
    for mode, expected in (("auto", True), ("record", False)):
        session = Session(mode=mode, cassette=tmp_path / "c.json", rules=sources)
        try:
            assert session.is_live(chat(model="gpt-4o-realtime-preview")) is expected
            assert not session.is_live(chat())
        finally:
            session.discard()


BAD = [
    (
        ORDER + '\n[[volatile]]\nkind = "x"\npattern = "("\n',
        'otel-replay.toml:7: [[volatile]] #2: pattern "(" does not compile: missing )',
    ),
    ("colour = 1\n", "otel-replay.toml:1: unknown key 'colour' (expected ignore, volatile, live)"),
    (
        '[[ignore]]\npath = "params.a"\nmodle = "x"\n',
        "otel-replay.toml:3: [[ignore]] #1: unknown key 'modle' "
        "(expected path, pattern, provider, model, endpoint, profile)",
    ),
    (
        '[[ignore]]\npath = "prams.a"\n',
        'otel-replay.toml:2: [[ignore]] #1: path "prams.a" must start with one of endpoint, '
        "model, system, messages, tools, params",
    ),
    ("[[ignore]]\n", "otel-replay.toml:1: [[ignore]] #1: missing 'path'"),
    ('[[volatile]]\nkind = "a b"\npattern = "x"\n', "otel-replay.toml:2: [[volatile]] #1: kind"),
    (
        '[[volatile]]\nkind = "a"\npattern = "x*"\n',
        'otel-replay.toml:3: [[volatile]] #1: pattern "x*" matches the empty string',
    ),
    ("[[live]]\n", "otel-replay.toml:1: [[live]] #1: needs at least one of"),
    ("ignore = 3\n", "otel-replay.toml:1: ignore must be an array of tables"),
    ("[[ignore]\n", "otel-replay.toml:1: not valid TOML"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_bad_rule_file_is_one_line_naming_file_line_and_rule(text, message):
    with pytest.raises(RuleFileError) as caught:
        parse_rules(text, "otel-replay.toml")
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_a_bad_rule_file_on_the_command_line_exits_2(tmp_path):
    (tmp_path / "otel-replay.toml").write_text('[[volatile]]\nkind = "x"\npattern = "("\n')
    done = subprocess.run(
        [sys.executable, "-m", "otel_replay", "replay", "--cassette", "c.json", "--", "true"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == (
        'otel-replay: otel-replay.toml:3: [[volatile]] #1: pattern "(" does not compile: '
        "missing )\n"
    )


def test_rule_files_are_found_in_cwd_beside_the_cassette_and_in_pyproject(tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    assert find_rule_file(there / "c.json", here) is None
    (here / "pyproject.toml").write_text(
        '[tool.otel-replay]\n[[tool.otel-replay.live]]\nmodel = "m"\n'
    )
    assert (
        find_rule_file(there / "c.json", here).rules
        == rules('[[live]]\nmodel = "m"\n').table()[-1:]
    )
    (there / "otel-replay.toml").write_text(ORDER)
    assert find_rule_file(there / "c.json", here).origin.endswith("otel-replay.toml")
    (here / "otel-replay.toml").write_text(RUN)
    assert find_rule_file(there / "c.json", here).text == RUN
    given = tmp_path / "more.toml"
    given.write_text(ORDER)
    sources = rule_sources(there / "c.json", given, cwd=here)
    assert [f.text for f in sources.files] == [RUN, ORDER]


def test_pyproject_without_the_table_is_no_rule_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "otel-replay-user"\n')
    assert find_rule_file(None, tmp_path) is None


@pytest.mark.parametrize("name", ["otel-replay.toml", "pyproject.toml"])
def test_the_schema_accepts_the_examples_and_the_parser_agrees(name):
    schema = json.loads((ROOT / "schemas" / "rules.schema.json").read_text())
    text = (ROOT / "examples" / "rules" / name).read_text()
    data = tomllib.loads(text)
    if name == "pyproject.toml":
        data = data["tool"]["otel-replay"]
    jsonschema.validate(data, schema)
    table = ("tool", "otel-replay") if name == "pyproject.toml" else ()
    assert parse_rules(text, name, table=table)[0].rules
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "colour": 1}, schema)


def test_rules_written_back_read_the_same():
    found = parse_rules((ROOT / "examples" / "rules" / "otel-replay.toml").read_text(), "x")[0]
    assert parse_rules(to_toml(found.rules), "y")[0].rules == found.rules


def test_rules_show_prints_the_rules_in_force_as_a_rule_file(tmp_path):
    (tmp_path / "otel-replay.toml").write_text(ORDER)
    done = subprocess.run(
        [sys.executable, "-m", "otel_replay", "rules", "show", "codex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "# profile codex" in done.stdout and "# profile claude-code" not in done.stdout
    assert 'pattern = "ORD-[0-9]{6}"' in done.stdout
    tomllib.loads(done.stdout)  # the rule file's own syntax


@given(st.integers(0, 10**14), st.integers(0, 10**14), st.integers(0, 10**15))
def test_integer_range_pattern_matches_exactly_the_range(a, b, n):
    import re

    low, high = min(a, b), max(a, b)
    pattern = re.compile(integer_range_pattern(low, high))
    for value in (n, low, high, max(low - 1, 0), high + 1):
        assert bool(pattern.fullmatch(str(value))) is (low <= value <= high)


def test_the_epoch_window_follows_now():
    import re

    rule = epoch_rule(now=1_796_046_317)
    assert re.fullmatch(rule.pattern, "1796046317745")
    assert re.fullmatch(rule.pattern, "1796046317")
    assert not re.fullmatch(rule.pattern, "123456")
    assert not re.fullmatch(epoch_rule(now=1_000_000_000).pattern, "1796046317")


def test_suggest_an_ignore_for_a_param_and_a_volatile_for_a_generated_value():
    matcher = Matcher([chat(metadata={"run": "x1"})], normalizer=matching_rules())
    miss = matcher.probe(chat(metadata={"run": "y2"}))
    assert isinstance(miss, MatchMiss)
    found = suggest(miss, "openai")
    assert found.toml() == (
        '[[ignore]]\npath = "params.metadata.run"\nprovider = "openai"\nmodel = "gpt-4o-mini"\n'
    )
    assert found.hides and not found.refused
    matcher = Matcher([chat("token k3j4h5g6f7d8s9a0")], normalizer=matching_rules())
    miss = matcher.probe(chat("token q1w2e3r4t5y6u7i8"))
    assert isinstance(miss, MatchMiss)
    found = suggest(miss, "openai")
    assert [r.kind for r in found.rules] == ["token"]
    sources = RuleSources((parse_rules(found.toml(), "s.toml")[0],))
    assert hits(sources, chat("token k3j4h5g6f7d8s9a0"), chat("token q1w2e3r4t5y6u7i8"))


def test_suggest_refuses_content_that_should_count():
    matcher = Matcher([chat("ship ORD-123456")], normalizer=matching_rules())
    miss = matcher.probe(chat("ship ORD-123457"))
    assert isinstance(miss, MatchMiss)
    found = suggest(miss, "openai")
    assert not found.rules and "content that should count" in found.refused[0]


@pytest.mark.parametrize(
    ("token", "generated"),
    [
        ("k3j4h5g6f7d8s9a0", True),
        ("deadbeefcafe0123", True),
        ("ORD-123456", False),
        ("weather", False),
    ],
)
def test_looks_generated(token, generated):
    assert looks_generated(token) is generated


def test_generated_pattern_keeps_the_common_prefix():
    assert generated_pattern("run-8f3a2b91c0d4", "run-0a1b2c3d4e5f") == r"\brun\-[0-9a-f]{12}\b"


def test_a_rule_file_is_a_value():
    assert isinstance(parse_rules(ORDER, "a")[0], RuleFile)
    assert os.fspath(ROOT)


def test_recordings_are_normalised_with_the_directories_they_were_made_in(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path.parent))
    engine = matching_rules()
    recorded = chat("open /src/alice/proj/a.py in /home/alice")
    live = chat(f"open {tmp_path}/a.py in {tmp_path.parent}")
    elsewhere = engine.with_places("/src/alice/proj", "/home/alice")
    assert Matcher([recorded], normalizer=engine, recorded_by=elsewhere).probe(live) == 0
    assert isinstance(Matcher([recorded], normalizer=engine).probe(live), MatchMiss)
    changed = chat(f"open {tmp_path}/b.py in {tmp_path.parent}")
    assert isinstance(
        Matcher([recorded], normalizer=engine, recorded_by=elsewhere).probe(changed), MatchMiss
    )


def test_the_directories_are_recorded_only_when_a_request_mentions_them():
    places = ("/src/alice/proj", "/home/alice")
    sources = RuleSources()
    assert sources.recorded_form([chat("hello")], places) is None
    form = sources.recorded_form([chat("see /home/alice/notes")], places)
    assert form == {"profiles": [], "places": {"cwd": places[0], "home": places[1]}}
    assert recorded_places({"rules": form}) == places
    assert recorded_places({}) is None


def test_cassette_rules_put_the_recorded_rules_under_the_users():
    from otel_replay.matching.session_rules import cassette_rules

    form = {"profiles": [], "file": ORDER, "places": {"cwd": "/src/a", "home": "/home/a"}}
    live, recorded_by = cassette_rules(rules(RUN), {"rules": form}, "c.json")
    assert [r.kind for r in live.rules if getattr(r, "kind", "") == "order"] == ["order"]
    assert recorded_by is not None and recorded_by.places == ("/src/a", "/home/a")
    assert cassette_rules(RuleSources(), {}, "c.json")[1] is None
    with pytest.raises(RuleFileError, match=r"^c\.json: source\.rules:1: "):
        cassette_rules(RuleSources(), {"rules": {"file": "[[x]]\n"}}, "c.json")


@pytest.mark.parametrize(
    ("path", "value", "found"),
    [
        ("a.b", {"a": {"b": 1}}, True),
        ("a.c", {"a": {"b": 1}}, False),
        ("a.b.c", {"a": {"b": '{"c": 2}'}}, True),  # into JSON carried as text
        ("a.b.d", {"a": {"b": '{"c": 2}'}}, False),
        ("a[*].x", {"a": [{"y": 1}, {"x": 1}]}, True),
        ("a.x-*", {"a": {"x-codex": 1}}, True),
    ],
)
def test_has_path(path, value, found):
    from otel_replay.matching.ignore import has_path, parse_path

    assert has_path(value, parse_path("params." + path)[1:]) is found


@pytest.mark.parametrize("name", ["otel-replay", '"otel-replay"'])
def test_a_bad_pyproject_table_names_its_line(name):
    text = f'[project]\nname = "x"\n\n[[tool.{name}.volatile]]\nkind = "a"\npattern = "("\n'
    with pytest.raises(RuleFileError) as caught:
        parse_rules(text, "pyproject.toml", table=("tool", "otel-replay"))
    assert str(caught.value).startswith('pyproject.toml:6: [[volatile]] #1: pattern "("')
