"""The redactor of each session a process opens (``serve`` switching cassettes, a pytest
session's blocks) shares the RE2 automata compiled for the same secrets, and redacts as
one built alone does."""

from __future__ import annotations

from otel_replay.redaction.redact import Redactor

SECRET = "sk-proj-" + "Q1w2E3r4T5y6U7i8O9p0" * 2
ENV = {"OPENAI_API_KEY": SECRET, "OTEL_REPLAY_HMAC_KEY": "k" * 32}
BODY = {"messages": [{"role": "user", "content": f"key {SECRET} and prose"}], "n": 1}


def test_redactors_of_the_same_secrets_share_their_compiled_patterns(tmp_path):
    first, second = (Redactor.from_environment(ENV, cwd=tmp_path) for _ in range(2))
    assert first._prefilter_re is second._prefilter_re
    assert first._values_re is second._values_re
    assert first.json(BODY) == second.json(BODY)
    assert SECRET not in str(second.json(BODY))
    # other secrets: other patterns, each redacting only its own
    other = Redactor.from_environment({"OPENAI_API_KEY": SECRET[::-1]}, cwd=tmp_path)
    assert other._values_re is not first._values_re
    assert SECRET[::-1] not in other.text(f"x {SECRET[::-1]} y")
