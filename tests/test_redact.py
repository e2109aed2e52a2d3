"""Redaction: every secret shape, environment and .env values, JSON and headers."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from secrets_corpus import (
    AWS_EXAMPLE_SECRET,
    FAKE_ANTHROPIC_KEY,
    FAKE_OPENAI_KEY,
    KINDS,
    SAMPLES,
    fake,
)

from otel_replay.redaction.headers import is_sensitive_header
from otel_replay.redaction.names import is_secret_field, is_secret_name, parse_dotenv, redact_argv
from otel_replay.redaction.redact import PATTERNS_ONLY, Redactor
from otel_replay.redaction.trace_line import names_a_secret, scrub_secret_attributes

NO_DOTENV = Path("/nonexistent-otel-replay-test-dir")


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.kind)
def test_every_corpus_sample_redacts_to_its_typed_placeholder(sample):
    out = PATTERNS_ONLY.text(sample.text)
    assert out == sample.redacted
    assert sample.secret not in out


def test_corpus_covers_every_kind_the_brief_names():
    kinds = {s.kind for s in SAMPLES}
    assert kinds >= {
        "openai-key", "anthropic-key", "aws-access-key-id", "aws-secret-key", "github-token",
        "google-api-key", "slack-token", "stripe-key", "jwt", "bearer-token", "private-key",
        "url-password", "query-secret",
    }  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        "the bearer of bad news arrived",
        "see risk-assessment-2024-report-final and task-12345678901234567890",
        "https://example.com/search?q=paris&lang=en",
        "model gpt-4o-2024-08-06 and claude-3-5-sonnet-20241022",
        "x = y + 1; if a == b: return secretary",
        "call_abc123 msg_01XFDUDYJgAACzvnptvVoYEL 2024-05-01T12:00:00Z",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert PATTERNS_ONLY.text(text) == text


surrounding = st.text(max_size=40)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(KINDS), seed=st.integers(0, 10**6), before=surrounding, after=surrounding
)
def test_random_surrounding_text_never_leaks_the_secret(kind, seed, before, after):
    sample = fake(kind, seed)
    once = PATTERNS_ONLY.text(before + sample.text + after)
    assert sample.secret not in once
    assert f"[REDACTED:{kind}]" in once or "[REDACTED:" in once
    assert PATTERNS_ONLY.text(once) == once  # idempotent


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(KINDS), a=st.integers(0, 10**6), b=st.integers(0, 10**6))
def test_placeholder_is_the_same_for_different_secrets_of_one_kind(kind, a, b):
    first, second = fake(kind, a), fake(kind, b)
    other_text = first.text.replace(first.secret, second.secret)
    assert PATTERNS_ONLY.text(first.text) == PATTERNS_ONLY.text(other_text) == first.redacted


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=200))
def test_redaction_is_idempotent_on_any_text(text):
    once = PATTERNS_ONLY.text(text)
    assert PATTERNS_ONLY.text(once) == once


def test_secret_named_environment_variables_are_redacted_by_name():
    environ = {
        "MY_SERVICE_TOKEN": "tok-value-123456",
        "DB_PASSWORD": "hunter2hunter2",
        "SIGNING_SECRET": "s3cr3t-signing",
        "SHORT_KEY": "abc12",  # shorter than 6: ignored
        "HOME": "/home/someone-with-a-long-name",  # not a secret name
    }
    redactor = Redactor.from_environment(environ, cwd=NO_DOTENV)
    text = "tok-value-123456 hunter2hunter2 s3cr3t-signing abc12 /home/someone-with-a-long-name"
    assert redactor.text(text) == (
        "[REDACTED:env:MY_SERVICE_TOKEN] [REDACTED:env:DB_PASSWORD] "
        "[REDACTED:env:SIGNING_SECRET] abc12 /home/someone-with-a-long-name"
    )
    assert "tok-value" not in repr(redactor)
    assert set(redactor.names) == {"MY_SERVICE_TOKEN", "DB_PASSWORD", "SIGNING_SECRET"}


def test_secret_shapes_win_over_environment_values():
    """A key reads the same whether or not this machine's environment holds it."""
    redactor = Redactor.from_environment(
        {"OPENAI_API_KEY": FAKE_OPENAI_KEY, "ANTHROPIC_API_KEY": FAKE_ANTHROPIC_KEY},
        cwd=NO_DOTENV,
    )
    body = f'{{"a": "{FAKE_OPENAI_KEY}", "b": "{FAKE_ANTHROPIC_KEY}"}}'
    expected = '{"a": "[REDACTED:openai-key]", "b": "[REDACTED:anthropic-key]"}'
    assert redactor.text(body) == PATTERNS_ONLY.text(body) == expected


def test_longest_environment_value_wins():
    redactor = Redactor({"A_KEY": "abcdefgh1234", "B_KEY": "abcdefgh1234567890"})
    assert redactor.text("x abcdefgh1234567890 y abcdefgh1234") == (
        "x [REDACTED:env:B_KEY] y [REDACTED:env:A_KEY]"
    )


def test_placeholders_are_never_redacted_again():
    redactor = Redactor({"ODD_TOKEN": "REDACTED", "OTHER_TOKEN": "openai-key"})
    text = "key [REDACTED:openai-key] and REDACTED"
    assert redactor.text(text) == "key [REDACTED:openai-key] and [REDACTED:env:ODD_TOKEN]"
    assert redactor.text(redactor.text(text)) == redactor.text(text)


DOTENV = """\
# a comment
export OPENAI_API_KEY="{openai}"
PLAIN_VALUE=plain-value-123 # trailing comment
SINGLE='single quoted value'
DOUBLE="double \\"quoted\\" value"
SHORT=abc
EMPTY=
not a line
"""


def test_dotenv_values_are_all_secrets(tmp_path):
    (tmp_path / ".env").write_text(DOTENV.format(openai=FAKE_OPENAI_KEY))
    redactor = Redactor.from_environment({}, cwd=tmp_path)
    assert set(redactor.names) == {"OPENAI_API_KEY", "PLAIN_VALUE", "SINGLE", "DOUBLE"}
    text = f'{FAKE_OPENAI_KEY} plain-value-123 single quoted value double "quoted" value abc'
    assert redactor.text(text) == (
        "[REDACTED:openai-key] [REDACTED:env:PLAIN_VALUE] [REDACTED:env:SINGLE] "
        "[REDACTED:env:DOUBLE] abc"
    )


def test_parse_dotenv_handles_export_quotes_and_comments():
    parsed = parse_dotenv(DOTENV.format(openai="sk-x"))
    assert parsed == {
        "OPENAI_API_KEY": "sk-x",
        "PLAIN_VALUE": "plain-value-123",
        "SINGLE": "single quoted value",
        "DOUBLE": 'double "quoted" value',
        "SHORT": "abc",
        "EMPTY": "",
    }


def test_missing_dotenv_is_fine(tmp_path):
    assert Redactor.from_environment({}, cwd=tmp_path).names == ()


def test_json_redacts_strings_and_keys_without_mutating():
    secret = fake("github-token", 3).secret
    value = {
        "messages": [{"role": "user", "content": f"my token is {secret}"}],
        secret: [1, 2.5, None, True, {"nested": (secret,)}],
        "clean": "nothing here",
    }
    before = copy.deepcopy(value)
    out = PATTERNS_ONLY.json(value)
    assert value == before
    assert secret not in repr(out)
    assert out["messages"][0]["content"] == "my token is [REDACTED:github-token]"
    assert out["[REDACTED:github-token]"][4] == {"nested": ("[REDACTED:github-token]",)}
    assert out["clean"] == "nothing here"


def test_json_without_secrets_returns_the_same_object():
    value = {"messages": [{"role": "user", "content": "hello"}], "n": 1}
    assert PATTERNS_ONLY.json(value) is value
    with_url = {"u": "https://example.com/?q=1"}
    assert PATTERNS_ONLY.json(with_url) is with_url


def test_json_env_values_with_characters_json_escapes():
    redactor = Redactor({"QUOTED_SECRET": 'pa"ss\\word-123'})
    assert redactor.json({"x": 'a pa"ss\\word-123 b'}) == {"x": "a [REDACTED:env:QUOTED_SECRET] b"}


def test_headers_drop_credentials_and_redact_the_rest():
    secret = fake("jwt", 1).secret
    headers = {
        "Authorization": "Bearer abc123def456",
        "x-api-key": FAKE_ANTHROPIC_KEY,
        "api-key": "azure-key-value",
        "Cookie": "session=1",
        "Proxy-Authorization": "Basic Zm9vOmJhcg==",
        "content-type": "application/json",
        "x-ratelimit-remaining-tokens": "99000",
        "x-trace": f"token {secret}",
    }
    assert PATTERNS_ONLY.headers(headers) == {
        "content-type": "application/json",
        "x-ratelimit-remaining-tokens": "99000",
        "x-trace": "token [REDACTED:jwt]",
    }
    assert PATTERNS_ONLY.headers([("X-Goog-Api-Key", "k"), ("Accept", "*/*")]) == {"Accept": "*/*"}
    assert is_sensitive_header("X-Custom-Token")
    assert not is_sensitive_header("anthropic-ratelimit-tokens-remaining")


def test_aws_secret_needs_its_key_name():
    assert PATTERNS_ONLY.text(AWS_EXAMPLE_SECRET) == AWS_EXAMPLE_SECRET
    assert PATTERNS_ONLY.text(f'"SecretAccessKey": "{AWS_EXAMPLE_SECRET}"') == (
        '"SecretAccessKey": "[REDACTED:aws-secret-key]"'
    )


def test_truncated_private_key_is_redacted_to_the_end():
    text = "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc"
    assert PATTERNS_ONLY.text(text) == "key:\n[REDACTED:private-key]"


def test_raw_json_text_stays_valid_json_and_holds_no_secret():
    """Redacting a raw body or an SSE data line must not break its JSON escapes."""
    import json

    redactor = Redactor({"QUOTED_SECRET": 'pa"ss\\word-123'})
    samples = [fake(kind, 5) for kind in KINDS]
    content = "\n".join(s.text + '"\\' for s in samples) + '\nmix pa"ss\\word-123\n'
    content += "https://x.example/?key=abc123\nnext https://u:pw12345\\@host/"
    raw = json.dumps({"messages": [{"role": "user", "content": content}]})
    out = redactor.text(raw)
    parsed = json.loads(out)
    assert 'pa"ss\\word-123' not in parsed["messages"][0]["content"]
    for sample in samples:
        assert sample.secret not in out
        for piece in sample.secret.splitlines():
            assert piece not in parsed["messages"][0]["content"] or len(piece) < 16


def test_dotenv_settings_are_not_treated_as_secrets(tmp_path):
    (tmp_path / ".env").write_text(
        "MODEL=claude-haiku-4-5\nOPENAI_BASE_URL=http://127.0.0.1:1/v1\nRETRIES=3\n"
        "MODEL_API_KEY=hunter2hunter2\nWEBHOOK=abcdefgh12345678\n"
    )
    redactor = Redactor.from_environment({}, tmp_path)
    text = "claude-haiku-4-5 http://127.0.0.1:1/v1 hunter2hunter2 abcdefgh12345678"
    assert redactor.text(text) == (
        "claude-haiku-4-5 http://127.0.0.1:1/v1 [REDACTED:env:MODEL_API_KEY] [REDACTED:env:WEBHOOK]"
    )


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("STRIPE_KEY_2", True),
        ("SERVICE_TOKEN3", True),
        ("DB_PASS", True),
        ("DB_PASSWD", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("GITHUB_PAT", True),
        ("WEATHER_APIKEY", True),
        ("SECRET_KEY_BASE", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("my_password_file", True),
        ("TOKEN", True),
        ("HOME", False),
        ("PWD", False),
        ("OLDPWD", False),
        ("PATH", False),
        ("OPENAI_BASE_URL", False),
        ("KEYBOARD_LAYOUT", False),
        ("PYTEST_XDIST_WORKER_COUNT", False),
        ("MONKEY", False),
        ("PASSAGE_COUNT", False),
        ("API_TOKEN_FILE_CONTENT", True),
        ("aws_secret_access_key", True),
        ("SLACK_BOT_TOKEN_V2", True),
        ("clientSecret", True),
        ("APIKey", True),
        ("MAX_TOKENS", False),
        ("max_tokens", False),
        ("KEYBOARD", False),
        ("TOKEN_COUNT", False),
        ("token_count", False),
        ("llm.token_count.prompt", False),
        ("gen_ai.usage.input_tokens", False),
        ("tokenizerPath", False),
        ("SSH_KEY_PATH", False),
        ("CACHE_TOKEN", True),
        ("PRIVATE_KEY", True),
    ],
)
def test_secret_variable_names(name, secret):
    assert is_secret_name(name) is secret


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("prompt_cache_key", False),
        ("idempotency_key", False),
        ("partitionKey", False),
        ("public_key", False),
        ("private_key", True),
        ("cache_token", True),
        ("aws_secret_access_key", True),
    ],
)
def test_a_key_named_for_what_it_identifies_is_no_secret_field(name, secret):
    assert is_secret_field(name) is secret


def test_an_identifier_key_in_a_body_is_kept_as_sent():
    """OpenAI's ``prompt_cache_key`` (a conversation's id, Codex sends one) names a cache
    entry, not a credential: a recorded body keeps it, so a request sent again as it was
    finds its recording by its very bytes."""
    redactor = Redactor.from_environment({}, cwd=NO_DOTENV)
    body = {"prompt_cache_key": "a3f2c9bf-9c63-46b9-90f2-44556f25e2a2", "api_key": "k-12345678"}
    out = redactor.json(body)
    assert out["prompt_cache_key"] == body["prompt_cache_key"]
    assert out["api_key"] != body["api_key"]


def test_secrets_of_numbered_and_credential_variables_are_redacted_by_name():
    redactor = Redactor.from_environment(
        {"STRIPE_KEY_2": "k2-value-123456", "DB_PASS": "hunter2-longer", "HOME": "/home/me"},
        cwd=NO_DOTENV,
    )
    out = redactor.text("k2-value-123456 hunter2-longer /home/me")
    assert out == "[REDACTED:env:STRIPE_KEY_2] [REDACTED:env:DB_PASS] /home/me"


def test_corpus_covers_the_hosted_model_and_platform_keys():
    kinds = {s.kind for s in SAMPLES}
    assert kinds >= {
        "huggingface-token", "groq-key", "xai-key", "replicate-token", "databricks-token",
        "openrouter-key", "perplexity-key", "gitlab-token", "npm-token", "sendgrid-key",
        "digitalocean-token", "basic-auth", "token-auth", "azure-account-key", "slack-webhook",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ('{"aws": {"secret_key": "wJalrXUtnFEMI/K7MDENG"}}',
         '{"aws": {"secret_key": "[REDACTED:secret-field]"}}'),
        ('{"arguments": "{\\"password\\": \\"correct-horse-9\\"}"}',
         '{"arguments": "{\\"password\\": \\"[REDACTED:secret-field]\\"}"}'),
        ('"refresh_token": "1//0gabcdefghijk"', '"refresh_token": "[REDACTED:secret-field]"'),
        ("--db-password=hunter2secret", "--db-password=[REDACTED:secret-field]"),
        ("client_secret=abcdefgh12345", "client_secret=[REDACTED:secret-field]"),
        ('{"api_key": "weather-service-key"}', '{"api_key": "[REDACTED:secret-field]"}'),
        # not secrets: prose, short values, booleans, placeholders, a key named "key"
        ("the secret: plainword", "the secret: plainword"),
        ('{"password": true, "max_tokens": 100, "key": "weather_city"}',
         '{"password": true, "max_tokens": 100, "key": "weather_city"}'),
        ('{"secret": "[REDACTED:x]"}', '{"secret": "[REDACTED:x]"}'),
    ],
)  # fmt: skip
def test_values_under_secret_names_are_redacted(text, redacted):
    assert PATTERNS_ONLY.text(text) == redacted


def test_a_command_line_hides_the_values_of_secret_options():
    argv = ["agent", "--db-password=hunter2secret", "--api-key", "plainvalue", "--city", "Lisbon",
            "--token", "--verbose"]  # fmt: skip
    assert redact_argv(argv, PATTERNS_ONLY.text) == [
        "agent", "--db-password=[REDACTED:secret-field]", "--api-key", "[REDACTED:argument]",
        "--city", "Lisbon", "--token", "--verbose",
    ]  # fmt: skip


_LONG_PIECES = st.sampled_from(
    [
        "plain prose about a tool and its arguments. ",
        "see https://docs.example/guide?page=2 for more. ",
        "key sk-proj-" + "Ab3" * 16 + " in a pasted log. ",
        "Authorization: Bearer " + "tok" * 12 + " ",
        '{"nested": "json text"} ',
    ]
)
_CONVERSATION = st.lists(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant"]),
            "content": st.lists(_LONG_PIECES, min_size=1, max_size=12).map("".join),
        }
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=25, deadline=None)
@given(turns=st.lists(_CONVERSATION, min_size=1, max_size=4))
def test_remembered_redaction_equals_a_fresh_redactor_turn_after_turn(
    turns: list[list[dict[str, str]]],
) -> None:
    """Long strings are redacted once and remembered: each turn (which resends earlier
    messages) gives exactly what a redactor that never saw them gives, whether the body's
    size is known or not."""
    remembering = Redactor({"OPENAI_API_KEY": "sk-" + "z" * 40})
    conversation: list[dict[str, str]] = []
    for turn in turns:
        conversation = conversation + turn
        body = {"messages": conversation, "system": "You are terse. " * 30}
        fresh = Redactor({"OPENAI_API_KEY": "sk-" + "z" * 40}).json(copy.deepcopy(body))
        assert remembering.json(body) == fresh
        assert remembering.json(copy.deepcopy(body), size=10**6) == fresh


def test_remembered_redaction_starts_afresh_past_its_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import otel_replay.redaction.redact as redact

    monkeypatch.setattr(redact, "_MEMO_MAX_CHARS", 2000)
    redactor = Redactor()
    secret = "sk-proj-" + "Q7" * 24
    texts = [f"message {i} " + "x" * 600 + f" {secret}" for i in range(10)]
    for text in texts:
        out = redactor.json({"text": text}, size=10**6)
        assert isinstance(out, dict) and secret not in out["text"]
        assert "[REDACTED:openai-key]" in out["text"]
    assert redactor._memo_chars <= 2000
    assert 0 < len(redactor._memo) <= 3


_FIELD_NAMES = [
    "password",
    "api_key",
    "apiKey",
    "client_secret",
    "refresh_token",
    "token",
    "max_tokens",
    "passwordHint",
    "role",
    "content",
    "credentials",
    "db-password",
]


@settings(max_examples=70, deadline=None)
@given(st.sampled_from(_FIELD_NAMES), st.text(max_size=40) | st.sampled_from(["hunter2xyz", ""]))
def test_a_structured_field_is_redacted_as_its_json_text_is(name, value):
    """A value under a secret's name in a parsed body (what the gateway stores in the
    cassette) is redacted exactly as the same pair is in JSON text (the trace line)."""
    redactor = Redactor()
    text = redactor.text(json.dumps({name: value}, ensure_ascii=False))
    structured = redactor.json({name: value})
    try:
        expected = json.loads(text)
    except ValueError:  # the text's redaction broke its JSON: the field is redacted whole
        expected = {name: "[REDACTED:secret-field]"}
    assert structured == expected


def test_a_password_in_a_request_body_never_reaches_the_cassette():
    body = {"messages": [{"role": "user", "content": "hi"}], "password": "hunter2-and-more"}
    clean = Redactor().json(body)
    assert "hunter2" not in json.dumps(clean)
    assert clean["password"] == "[REDACTED:secret-field]"  # type: ignore[index]


@given(
    st.sampled_from(["Bearer ", "Token ", '"password": "', "api_key=", '"refresh_token":"']),
    st.sampled_from(["[REDACTED:kept]", "-----BEGIN", "-----BEGIN ", "[REDACTED:a]x-"]),
    st.sampled_from([FAKE_OPENAI_KEY, FAKE_ANTHROPIC_KEY, "ghp_" + "a1B2" * 9, "AKIA" + "Q" * 16]),
)
def test_a_key_behind_what_a_shape_keeps_is_redacted(name: str, lead: str, key: str) -> None:
    """A shape whose value starts like a placeholder or a PEM block keeps that value, but
    never a key inside it (``Bearer -----BEGINsk-proj-...`` once went to disk whole)."""
    for redactor in (PATTERNS_ONLY, Redactor({"SOME_TOKEN": "unrelated-value-1234"})):
        assert key not in redactor.text(name + lead + key)
        assert key not in json.dumps(redactor.json({"header": name + lead + key}))


_FRAGMENTS = st.sampled_from(
    [s.text for s in SAMPLES]
    + [s.secret for s in SAMPLES]
    + ["password", "api_key", "x_token", "Bearer", "://", "é", "\n", '"', "\\", "\u2028", " "]
)
_TEXTS = st.lists(_FRAGMENTS | st.text(max_size=12), max_size=4).map("".join)
_BODIES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _TEXTS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXTS, inner, max_size=4),
    max_leaves=16,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_BODIES, st.sampled_from(["plain", "env"]))
def test_json_skips_only_what_the_walk_leaves_alone(body, secrets):
    """``json`` skips the walk when its prefilter finds no anchor in the body's compact
    text (orjson's, the standard library's where orjson refuses): it always returns what
    walking every string and key returns."""
    env = {"MY_API_KEY": 'sé"cr\\et-value-42'} if secrets == "env" else {}
    redactor = Redactor.from_environment(env, cwd=NO_DOTENV)
    skipped, walked = redactor.json(copy.deepcopy(body)), redactor._walk(copy.deepcopy(body))
    assert json.dumps(skipped) == json.dumps(walked)  # as text: NaN is not equal to itself


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("aws_secret_access_key", True),
        ("API_TOKEN_FILE_CONTENT", True),
        ("db.password", True),
        ("deploy.apiKey", True),
        ("key", False),  # a key/value pair's key
        ("token", False),  # a log-probability's token
        ("max_tokens", False),
        ("token_count", False),
        ("passwordHint", False),
        ("keyboard", False),
    ],
)
def test_secret_field_names(name, secret):
    assert is_secret_field(name) is secret


AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzzzzzzzz"


def test_a_secret_in_json_held_in_a_string_held_in_json_is_redacted_as_text():
    """Tool-call arguments (JSON in a string) inside a span attribute (JSON in a string)
    inside a trace line: the key's quotes are escaped once per level."""
    arguments = json.dumps({"config": {"aws_secret_access_key": AWS_SECRET}, "n": 1})
    messages = json.dumps([{"role": "assistant", "parts": [{"arguments": arguments}]}])
    line = json.dumps({"key": "gen_ai.input.messages", "value": {"stringValue": messages}})
    out = PATTERNS_ONLY.text(line)
    assert AWS_SECRET not in out and "[REDACTED:aws-secret-key]" in out
    inner = json.loads(
        json.loads(json.loads(out)["value"]["stringValue"])[0]["parts"][0]["arguments"]
    )
    assert inner == {"config": {"aws_secret_access_key": "[REDACTED:aws-secret-key]"}, "n": 1}


def test_a_value_under_a_name_with_a_secret_word_is_redacted_in_json():
    body = {"args": {"API_TOKEN_FILE_CONTENT": "tfc-abcdefgh1234", "token_count": "12345678"}}
    assert PATTERNS_ONLY.json(body) == {
        "args": {"API_TOKEN_FILE_CONTENT": "[REDACTED:secret-field]", "token_count": "12345678"}
    }


def _attribute(name: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"key": name, "value": value}


def test_attributes_named_like_a_secret_are_scrubbed_at_any_depth():
    """Span, event, log and resource attributes, and key/value lists inside them."""
    nested = {
        "kvlistValue": {
            "values": [
                _attribute("region", {"stringValue": "eu-west-1"}),
                _attribute("aws_secret_access_key", {"stringValue": AWS_SECRET}),
            ]
        }
    }
    doc = {
        "resourceLogs": [
            {
                "resource": {
                    "attributes": [
                        _attribute("API_TOKEN_FILE_CONTENT", {"stringValue": "tfc-abcdefgh1234"})
                    ]
                },
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "body": nested,
                                "attributes": [
                                    _attribute("deploy", nested),
                                    _attribute("llm.token_count.prompt", {"intValue": "12"}),
                                    _attribute("token_type", {"stringValue": "bearer-token"}),
                                ],
                            }
                        ]
                    }
                ],
            }
        ]
    }
    text = json.dumps(doc, separators=(",", ":"))
    assert names_a_secret(text)
    scrubbed = json.dumps(scrub_secret_attributes(doc))
    assert AWS_SECRET not in scrubbed and "tfc-abcdefgh1234" not in scrubbed
    assert "[REDACTED:attribute:aws_secret_access_key]" in scrubbed
    assert "[REDACTED:attribute:API_TOKEN_FILE_CONTENT]" in scrubbed
    assert "eu-west-1" in scrubbed and "bearer-token" in scrubbed and '"12"' in scrubbed
    assert not names_a_secret('{"key":"llm.token_count.prompt","value":{"intValue":"3"}}')
