"""Secrets hidden by an encoding: base64 (standard and URL-safe), percent-encoding and
JSON ``\\u`` escapes are decoded before matching, and the encoded run is replaced."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from secrets_corpus import FAKE_OPENAI_KEY, SAMPLES, fake

from otel_replay.redaction.redact import PATTERNS_ONLY, Redactor


def _b64(text: str, urlsafe: bool = False) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return encode(text.encode()).decode("ascii")


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.kind)
def test_every_kind_is_found_base64_encoded(sample):
    encoded = _b64(sample.text)
    out = PATTERNS_ONLY.text(f"data: {encoded} end")
    assert encoded not in out
    assert out == f"data: [REDACTED:{sample.kind}] end"


# Kinds whose text starts with six or more fixed characters: found at any offset inside
# an encoded document. The others are found when they start an encoded block (the test
# above, and the first case here).
LONG_PREFIXED = (
    "anthropic-key",
    "private-key",
    "url-password",
    "basic-auth",
    "token-auth",
    "bearer-token",
    "openrouter-key",
    "azure-account-key",
    "slack-webhook",
)


@settings(max_examples=70, deadline=None)
@given(
    kind=st.sampled_from(LONG_PREFIXED),
    seed=st.integers(0, 10**6),
    before=st.text(max_size=30),
    after=st.text(max_size=30),
    urlsafe=st.booleans(),
)
def test_a_secret_anywhere_inside_an_encoded_document_is_found(kind, seed, before, after, urlsafe):
    sample = fake(kind, seed)
    document = json.dumps({"note": before, "credential": sample.text, "more": after})
    encoded = _b64(document, urlsafe)
    out = PATTERNS_ONLY.text(f'{{"secret": "{encoded}"}}')
    assert encoded not in out and "[REDACTED:" in out


def test_percent_encoded_and_unicode_escaped_keys_are_found():
    key = FAKE_OPENAI_KEY
    percent = "".join(f"%{ord(c):02X}" for c in key)
    assert PATTERNS_ONLY.text(f"?q=1&value={percent}&x=2") == (
        "?q=1&value=[REDACTED:openai-key]&x=2"
    )
    # under a name that marks a secret, the name says what it is (as ``"secret": ...`` does)
    assert PATTERNS_ONLY.text(f"?q=1&secret_value={percent}&x=2") == (
        "?q=1&secret_value=[REDACTED:secret-field]&x=2"
    )
    # only the dashes encoded, as a URL builder does for a path segment
    partly = quote(key, safe="").replace("-", "%2D")
    assert (
        PATTERNS_ONLY.text(f"/v1/keys/{partly}/rotate") == "/v1/keys/[REDACTED:openai-key]/rotate"
    )
    escaped = "".join(f"\\u{ord(c):04x}" if c in "-_" else c for c in key)
    event = '{"delta": {"text": "' + escaped + '"}}'
    assert PATTERNS_ONLY.text(event) == '{"delta": {"text": "[REDACTED:openai-key]"}}'


def test_environment_values_are_found_encoded():
    redactor = Redactor(
        {"SERVICE_TOKEN": "plain-value-12345"},
    )
    out = redactor.text(_b64("token=plain-value-12345"))
    assert out == "[REDACTED:env:SERVICE_TOKEN]"


def test_encoded_text_without_secrets_is_left_alone(tmp_path: Path):
    rng = random.Random(7)
    image = base64.b64encode(rng.randbytes(200_000)).decode("ascii")
    assert PATTERNS_ONLY.text(image) is image
    prose = _b64("The quick brown fox jumps over the lazy dog, twice over: sk- is a prefix.")
    assert PATTERNS_ONLY.text(prose) == prose
    url = "https://example.com/search?q=caf%C3%A9%20cr%C3%A8me&page=2"
    assert PATTERNS_ONLY.text(url) == url
    assert PATTERNS_ONLY.text('{"text": "caf\\u00e9 ok \\u2014 fine"}') == (
        '{"text": "caf\\u00e9 ok \\u2014 fine"}'
    )


def test_the_agents_command_line_in_a_cassette_hides_secret_options(tmp_path: Path):
    import os
    import subprocess
    import sys

    from otel_replay.testing.stub import run_stub

    agent = tmp_path / "agent.py"
    agent.write_text(
        "import openai\n"
        "openai.OpenAI(max_retries=0).chat.completions.create(\n"
        "    model='m', messages=[{'role': 'user', 'content': 'hi'}])\n"
    )
    secrets = ["hunter2secret", "plainvalue1"]
    with run_stub() as stub:
        done = subprocess.run(
            [sys.executable, "-m", "otel_replay", "record", "--cassette", "c.json",
             "--upstream-openai", stub.openai_url, "--", sys.executable, str(agent),
             f"--db-password={secrets[0]}", "--api-key", secrets[1]],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
            env={**os.environ, "OPENAI_API_KEY": "sk-test-1234567890"},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "c.json").read_text()
    assert '"--db-password=[REDACTED:secret-field]"' in text
    assert '"[REDACTED:argument]"' in text
    assert not any(secret in text for secret in secrets)
