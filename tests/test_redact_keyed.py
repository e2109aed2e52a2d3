"""Keyed placeholders (``OTEL_REPLAY_HMAC_KEY``): ``[REDACTED:kind:3f2a9c1b]``.

Over the secret-shape corpus: the same secret gives the same placeholder in every run
(another process too), different secrets of a kind give different ones, also within one
text, another key gives others, and nothing of the secret is left; unkeyed, placeholders
are what they always were. End to end, with the real ``openai`` SDK through the gateway: a
prompt holding the recorded secret hits, one holding another secret misses, and a replay
without the key says why in one line; no file written holds a secret or the key.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import openai
import pytest
from conftest import files_text
from secrets_corpus import KINDS, SECRET_VALUES, SECRETS, fake

from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.redaction.keyed import PlaceholderKey
from otel_replay.redaction.redact import Redactor
from otel_replay.testing.stub import run_stub

HMAC_KEY = "team-hmac-key-7c1f0a9e4b2d"
OTHER_KEY = "another-hmac-key-55e0c2"
TAG = re.compile(r"(\[REDACTED:[A-Za-z0-9_.:-]+?):[0-9a-f]{8}\]")


def in_context(kind: str, seed: int) -> str:
    """A secret of ``kind`` in one fixed context (the text around it the same for every
    seed): only the secret itself changes with ``seed``."""
    context = fake(kind, 30)
    return context.text.replace(context.secret, fake(kind, seed).secret)


def keyed(key: str = HMAC_KEY) -> Redactor:
    return Redactor(key=PlaceholderKey(key))


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_keyed_same_secret_same_placeholder_another_differs(kind: str) -> None:
    one, two = in_context(kind, 1), in_context(kind, 2)
    first, again = keyed().text(one), keyed().text(one)  # two redactors: two runs
    assert first == again
    assert fake(kind, 1).secret not in first
    assert re.search(rf"\[REDACTED:{re.escape(kind)}:[0-9a-f]{{8}}\]", first), first
    # the keyed form is the unkeyed one with the digits added, and nothing else
    assert TAG.sub(r"\1]", first) == Redactor().text(one)
    assert keyed().text(two) != first  # another secret of the kind
    assert keyed(OTHER_KEY).text(one) != first  # another key
    together = keyed().text(f"{one} | {two}")
    assert together == f"{first} | {keyed().text(two)}"  # two secrets in one text stay apart


def test_the_corpus_keyed_alike_in_another_process_and_unkeyed_as_before() -> None:
    corpus = "\n".join(SECRETS.values())
    here = Redactor.from_environment({"OTEL_REPLAY_HMAC_KEY": HMAC_KEY}, cwd=Path("/"))
    script = (
        "import sys; from pathlib import Path;"
        "from otel_replay.redaction.redact import Redactor;"
        "print(Redactor.from_environment(cwd=Path('/')).text(sys.stdin.read()), end='')"
    )
    env = {**os.environ, "OTEL_REPLAY_HMAC_KEY": HMAC_KEY}
    there = subprocess.run(
        [sys.executable, "-c", script], input=corpus, env=env, capture_output=True, text=True
    )
    assert there.returncode == 0, there.stderr
    assert there.stdout == here.text(corpus)
    assert len(set(TAG.findall(there.stdout))) > len(KINDS) // 2
    unkeyed = Redactor.from_environment({}, cwd=Path("/")).text(corpus)
    assert TAG.sub(r"\1]", there.stdout) == unkeyed
    assert not TAG.search(unkeyed)


def test_every_placeholder_writer_is_keyed() -> None:
    """Values of secret variables, secret fields, attributes and headers named like a
    secret, and a command line's secret option: keyed too."""
    from otel_replay.redaction.headers import scrub_header_attributes
    from otel_replay.redaction.names import redact_argv
    from otel_replay.redaction.trace_line import scrub_secret_attributes

    key = PlaceholderKey(HMAC_KEY)
    env = Redactor({"BILLING_SERVICE_TOKEN": "svc-1234567890"}, key=key)
    assert re.fullmatch(
        r"use \[REDACTED:env:BILLING_SERVICE_TOKEN:[0-9a-f]{8}\]", env.text("use svc-1234567890")
    )
    field = env.json({"API_TOKEN_FILE_CONTENT": "tfc-abcdef0123456789"})
    assert re.fullmatch(r"\[REDACTED:secret-field:[0-9a-f]{8}\]", field["API_TOKEN_FILE_CONTENT"])

    def attribute(name: str, value: str) -> dict[str, object]:
        return {"key": name, "value": {"stringValue": value}}

    a, b = attribute("db.password", "pw-0123456789"), attribute("db.password", "pw-9876543210")
    scrubbed = [scrub_secret_attributes(x, key)["value"]["stringValue"] for x in (a, b)]
    assert all(s.startswith("[REDACTED:attribute:db.password:") for s in scrubbed)
    assert scrubbed[0] != scrubbed[1]
    header = scrub_header_attributes(attribute("http.request.header.x-api-key", "k-1234"), key)
    assert header["value"]["stringValue"].startswith("[REDACTED:header:x-api-key:")
    argv = redact_argv(["agent", "--api-key", "plain-value-1"], lambda s: s, key)
    assert re.fullmatch(r"\[REDACTED:argument:[0-9a-f]{8}\]", argv[2])
    assert scrub_secret_attributes(a)["value"]["stringValue"] == "[REDACTED:attribute:db.password]"
    assert repr(key) == f"PlaceholderKey({key.fingerprint})" and HMAC_KEY not in repr(key)


def all_keyed(path: Path) -> None:
    """Every placeholder in the file at ``path`` is keyed (and there are some)."""
    found = re.findall(r"\[REDACTED:[A-Za-z0-9_.:-]+\]", path.read_text())
    assert found and all(TAG.fullmatch(p) for p in found), (path.name, found[:5])


def _ask(env: dict[str, str], prompt: str) -> str:
    client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="sk-any", max_retries=0)
    try:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
        )
    except openai.BadRequestError as exc:
        return str(exc)
    return reply.choices[0].message.content or ""


def _replay(
    cassette: Path, out: Path, name: str, environ: dict[str, str], prompt: str
) -> tuple[str, object]:
    config = GatewayConfig(
        mode="strict",
        cassette=cassette,
        grpc_port=None,
        traces=out / f"{name}.jsonl",
        report=out / f"{name}-report.json",
        environ=environ,
    )
    with GatewayThread(config) as gw:
        answer = _ask(gw.env, prompt)
        summary = gw.stop()
    return answer, summary


def test_keyed_record_then_replay_same_secret_hits_another_misses(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    cassette = out / "c.json"
    secret, other = fake("openai-key", 41).secret, fake("openai-key", 42).secret
    corpus = "\n".join(SECRETS.values())

    def prompt(key: str) -> str:
        return f"rotate this key for me: {key}\n{corpus}"

    keyed_env = {"OPENAI_API_KEY": "sk-test-0000", "OTEL_REPLAY_HMAC_KEY": HMAC_KEY}
    with run_stub() as stub:
        config = GatewayConfig(
            mode="record",
            cassette=cassette,
            grpc_port=None,
            upstream_openai=stub.openai_url,
            traces=out / "rec.jsonl",
            environ=keyed_env,
        )
        with GatewayThread(config) as gw:
            assert _ask(gw.env, prompt(secret)).startswith("stub reply to:")
        assert secret in json.dumps([r.body for r in stub.received])  # it was sent
    doc = json.loads(cassette.read_text())
    fingerprint = PlaceholderKey(HMAC_KEY).fingerprint
    assert doc["source"]["placeholder_key"] == fingerprint

    same, summary = _replay(cassette, out, "same", keyed_env, prompt(secret))
    assert same.startswith("stub reply to:") and summary.replayed == 1, same

    changed, summary = _replay(cassette, out, "other", keyed_env, prompt(other))
    assert "replay miss: messages changed" in changed and len(summary.misses) == 1
    all_keyed(out / "c.misses.json")

    caplog.set_level(logging.WARNING, logger="otel_replay")
    plain_env = {"OPENAI_API_KEY": "sk-test-0000"}
    unkeyed, summary = _replay(cassette, out, "unkeyed", plain_env, prompt(secret))
    assert "replay miss" in unkeyed and len(summary.misses) == 1
    notices = [r.getMessage() for r in caplog.records if "OTEL_REPLAY_HMAC_KEY" in r.getMessage()]
    assert len(notices) == 1 and "\n" not in notices[0]
    assert f"recorded with OTEL_REPLAY_HMAC_KEY ({fingerprint}) and this run has none" in notices[0]

    # every placeholder the keyed runs wrote is keyed: cassette, traces, report
    for name in ("c.json", "rec.jsonl", "same.jsonl", "other.jsonl"):
        all_keyed(out / name)
    written = files_text(out)
    assert "c.misses.json" in {p.name for p in out.iterdir()}
    assert re.search(r"\[REDACTED:openai-key:[0-9a-f]{8}\]", written)
    leaked = [v for v in (secret, other, HMAC_KEY, *SECRET_VALUES.values()) if v in written]
    assert leaked == []
