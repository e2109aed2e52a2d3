"""Redaction takes time linear in its input, whatever the input.

The shapes run on RE2 (no backtracking). These tests feed the inputs that made the
previous engine take minutes (a 1 MB run of ``eyJ`` took longer than the whole suite) and
check the answers; a regression to a backtracking scan makes them run for minutes. The
ratios themselves are measured by ``python -m benchmarks redaction``."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from secrets_corpus import KINDS, fake

from otel_replay.redaction.redact import PATTERNS_ONLY, Redactor

MB = 1_000_000
TRAPS = {
    "jwt": "eyJ",
    "url-password": "://user:",
    "aws": "aws_secret_key=x ",
    "bearer-word": "Bearer authentication ",
    "openai": "sk-" + "a" * 31 + " ",
    "query-placeholder": "?key=[REDACTED:x]&",
    "private-key-begin": "-----BEGIN PRIVATE KEY-----",
    # labelled values: each label's value is the next label (one match, read once), and
    # masked values under a secret field's name (each value is searched again inside)
    "labelled-chain": "x_key=",
    "field-masked": "password=***",
}


def _fill(unit: str, size: int = MB) -> str:
    """``unit`` repeated to about ``size`` characters (whole units only)."""
    return unit * (size // len(unit))


@pytest.mark.parametrize("name", [n for n in TRAPS if n != "private-key-begin"])
def test_a_megabyte_of_a_trap_is_left_alone_and_a_secret_after_it_is_found(name: str) -> None:
    trap = _fill(TRAPS[name])
    assert PATTERNS_ONLY.text(trap) == trap
    secret = fake("openai-key", 1)
    out = PATTERNS_ONLY.text(trap + " " + secret.text)
    assert secret.secret not in out
    assert out.startswith(trap) and out.endswith(secret.redacted)


def test_an_unterminated_private_key_is_redacted_to_the_end_at_any_size() -> None:
    text = "before " + _fill(TRAPS["private-key-begin"])
    assert PATTERNS_ONLY.text(text) == "before [REDACTED:private-key]"


def test_a_megabyte_dense_with_tokens_redacts_every_one() -> None:
    unit = "Bearer " + "a" * 64 + " "
    out = PATTERNS_ONLY.text(_fill(unit, MB // 10))
    assert "aaaa" not in out
    assert out.count("[REDACTED:bearer-token]") == MB // 10 // len(unit)


@pytest.mark.parametrize(
    "unit",
    ["prompt_cache_key: Xk9#mPq2vL ", "password: *** ", "api_key: YOUR_API_KEY ",
     "secret: client_secret: plainword ", "token_count: Xk9#mPq2vL "],
)  # fmt: skip
def test_a_run_of_labelled_near_misses_is_left_alone_and_a_secret_after_it_is_found(
    unit: str,
) -> None:
    """Each is a match told apart in Python: a tenth of a megabyte keeps the test short
    (``python -m benchmarks redaction`` measures the growth)."""
    trap = _fill(unit, MB // 10)
    assert PATTERNS_ONLY.text(trap) == trap
    out = PATTERNS_ONLY.text(trap + "DB_PASSWORD: Xk9#mPq2vL")
    assert out == trap + "DB_PASSWORD: [REDACTED:secret-field]"


def test_environment_values_are_found_after_a_megabyte_of_near_misses() -> None:
    redactor = Redactor({"SERVICE_TOKEN": "s3cr3t-value-1234"})
    near = _fill("s3cr3t-value-123 ")
    out = redactor.text(near + "s3cr3t-value-1234")
    assert out == near + "[REDACTED:env:SERVICE_TOKEN]"


fragments = st.sampled_from(
    [*TRAPS.values(), "eyJhbGciOiJIUzI1NiJ9", ".", "@", " ", "\\", '"', "é", "[REDACTED:x]"]
)


@settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(st.tuples(fragments, st.integers(1, 200)), max_size=8),
    kind=st.sampled_from(KINDS),
    seed=st.integers(0, 10**6),
    where=st.integers(0, 8),
)
def test_secrets_among_long_runs_of_traps_never_leak(
    parts: list[tuple[str, int]], kind: str, seed: int, where: int
) -> None:
    sample = fake(kind, seed)
    pieces = [unit * count for unit, count in parts]
    pieces.insert(min(where, len(pieces)), " " + sample.text + " ")
    once = PATTERNS_ONLY.text("".join(pieces))
    assert sample.secret not in once
    assert PATTERNS_ONLY.text(once) == once


def test_lone_surrogates_do_not_stop_redaction() -> None:
    secret = fake("openai-key", 3)
    text = f"\ud800 {secret.text} \udfff tail"
    assert PATTERNS_ONLY.might_hold_secret(text)
    assert PATTERNS_ONLY.text(text) == f"\ud800 {secret.redacted} \udfff tail"
    plain = "\ud800 nothing here \udc00"
    assert PATTERNS_ONLY.text(plain) is plain
