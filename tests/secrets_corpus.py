"""Fake but correctly shaped secrets, for tests that must prove nothing secret is written.

Every value here is generated (or is a vendor's documented example) and grants nothing.
``SAMPLES`` holds two fixed samples per kind; ``fake(kind, seed)`` makes more, so property
tests can check that different secrets of one kind redact to the same placeholder.

A sample carries the secret, the text it appears in (the secret itself when its shape
needs no context, a header or key name when it does) and that text once redacted.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"
UPPER_DIGITS = string.ascii_uppercase + string.digits


@dataclass(frozen=True)
class Sample:
    kind: str
    """The placeholder kind: ``[REDACTED:{kind}]``."""
    secret: str
    """The value that must never survive redaction."""
    text: str
    """How it appears in a request, log line or header."""
    redacted: str
    """``text`` once redacted."""


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _with_digit(rng: random.Random, alphabet: str, n: int) -> str:
    body = _pick(rng, alphabet, n - 1)
    at = rng.randrange(n)
    return body[:at] + rng.choice(string.digits) + body[at:]


def _bare(kind: str, secret: str) -> Sample:
    return Sample(kind, secret, secret, f"[REDACTED:{kind}]")


def _openai(rng: random.Random) -> Sample:
    prefix = rng.choice(["sk-proj-", "sk-svcacct-", "sk-admin-", "sk-"])
    if prefix == "sk-":
        return _bare("openai-key", "sk-" + _with_digit(rng, ALNUM, 48))
    return _bare("openai-key", prefix + _pick(rng, B64URL, rng.choice([74, 156])))


def _anthropic(rng: random.Random) -> Sample:
    prefix = rng.choice(["sk-ant-api03-", "sk-ant-admin01-"])
    return _bare("anthropic-key", prefix + _pick(rng, B64URL, 93) + "AA")


def _aws_key_id(rng: random.Random) -> Sample:
    return _bare("aws-access-key-id", rng.choice(["AKIA", "ASIA"]) + _pick(rng, UPPER_DIGITS, 16))


def _aws_secret(rng: random.Random) -> Sample:
    secret = _pick(rng, ALNUM + "/+", 40)
    name, sep = rng.choice(
        [
            ("aws_secret_access_key", " = "),
            ('"AWS_SECRET_ACCESS_KEY"', ": "),
            ("AWS_SECRET_KEY", "="),
        ]
    )
    if name.startswith('"'):
        return Sample(
            "aws-secret-key",
            secret,
            f'{name}{sep}"{secret}"',
            f'{name}{sep}"[REDACTED:aws-secret-key]"',
        )
    return Sample(
        "aws-secret-key", secret, f"{name}{sep}{secret}", f"{name}{sep}[REDACTED:aws-secret-key]"
    )


def _github(rng: random.Random) -> Sample:
    prefix = rng.choice(["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"])
    if prefix == "github_pat_":
        return _bare("github-token", prefix + _pick(rng, ALNUM, 22) + "_" + _pick(rng, ALNUM, 59))
    return _bare("github-token", prefix + _pick(rng, ALNUM, 36))


def _google(rng: random.Random) -> Sample:
    return _bare("google-api-key", "AIza" + _pick(rng, B64URL, 35))


def _slack(rng: random.Random) -> Sample:
    prefix = rng.choice(["xoxb-", "xoxp-", "xoxa-", "xapp-1-"])
    digits = _pick(rng, string.digits, 12) + "-" + _pick(rng, string.digits, 13)
    return _bare("slack-token", f"{prefix}{digits}-{_pick(rng, ALNUM, 24)}")


def _stripe(rng: random.Random) -> Sample:
    return _bare("stripe-key", rng.choice(["sk_live_", "rk_live_"]) + _pick(rng, ALNUM, 24))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _jwt(rng: random.Random) -> Sample:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64url(
        json.dumps({"sub": _pick(rng, ALNUM, 12), "iat": rng.randrange(10**9)}).encode()
    )
    signature = _b64url(rng.randbytes(32))
    return _bare("jwt", f"{header}.{payload}.{signature}")


def _bearer(rng: random.Random) -> Sample:
    token = _with_digit(rng, ALNUM + "._~+/-", rng.randrange(24, 64))
    return Sample(
        "bearer-token",
        token,
        f"Authorization: Bearer {token}",
        "Authorization: Bearer [REDACTED:bearer-token]",
    )


def _private_key(rng: random.Random) -> Sample:
    label = rng.choice(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"])
    body = "\n".join(
        base64.b64encode(rng.randbytes(48)).decode("ascii") for _ in range(rng.randrange(3, 8))
    )
    return _bare("private-key", f"-----BEGIN {label}-----\n{body}\n-----END {label}-----")


def _url_password(rng: random.Random) -> Sample:
    password = _with_digit(rng, ALNUM + "!$%*", 16)
    return Sample(
        "url-password",
        password,
        f"postgres://app:{password}@db.internal:5432/main",
        "postgres://app:[REDACTED:url-password]@db.internal:5432/main",
    )


def _query_secret(rng: random.Random) -> Sample:
    value = _with_digit(rng, ALNUM, 32)
    name = rng.choice(["api_key", "key", "access_token"])
    return Sample(
        "query-secret",
        value,
        f"https://maps.example.com/v1/geocode?q=paris&{name}={value}&lang=en",
        f"https://maps.example.com/v1/geocode?q=paris&{name}=[REDACTED:query-secret]&lang=en",
    )


HEX = "0123456789abcdef"


def _prefixed(kind: str, prefix: str, alphabet: str, n: int) -> Callable[[random.Random], Sample]:
    """A vendor key: its documented prefix, then ``n`` characters of ``alphabet``."""
    return lambda rng: _bare(kind, prefix + _with_digit(rng, alphabet, n))


def _sendgrid(rng: random.Random) -> Sample:
    return _bare("sendgrid-key", f"SG.{_pick(rng, B64URL, 22)}.{_pick(rng, B64URL, 43)}")


def _digitalocean(rng: random.Random) -> Sample:
    return _bare(
        "digitalocean-token", rng.choice(["dop", "doo", "dor"]) + "_v1_" + _pick(rng, HEX, 64)
    )


def _slack_webhook(rng: random.Random) -> Sample:
    path = f"T{_pick(rng, UPPER_DIGITS, 8)}/B{_pick(rng, UPPER_DIGITS, 10)}/{_pick(rng, ALNUM, 24)}"
    secret = f"hooks.slack.com/services/{path}"
    return Sample("slack-webhook", secret, f"https://{secret}", "https://[REDACTED:slack-webhook]")


def _azure_account_key(rng: random.Random) -> Sample:
    key = base64.b64encode(rng.randbytes(64)).decode("ascii")
    before = "DefaultEndpointsProtocol=https;AccountName=agentstore;AccountKey="
    after = ";EndpointSuffix=core.windows.net"
    return Sample(
        "azure-account-key",
        key,
        before + key + after,
        before + "[REDACTED:azure-account-key]" + after,
    )


def _basic_auth(rng: random.Random) -> Sample:
    secret = base64.b64encode(f"agent:{_with_digit(rng, ALNUM, 16)}".encode()).decode("ascii")
    return Sample(
        "basic-auth",
        secret,
        f"Authorization: Basic {secret}",
        "Authorization: Basic [REDACTED:basic-auth]",
    )


def _token_auth(rng: random.Random) -> Sample:
    token = _with_digit(rng, HEX, 40)
    return Sample(
        "token-auth",
        token,
        f"Authorization: Token {token}",
        "Authorization: Token [REDACTED:token-auth]",
    )


# A secret with no shape of its own, after a label that names one: in a prompt,
# a log line or a tool's output, as ``label: value``, ``label=value`` or a JSON member
# written in prose (its quotes escaped once or twice when the text is JSON, or JSON in a
# string in JSON).
SECRET_LABELS = (
    "DB_PASSWORD", "db_pass", "GITHUB_PAT", "client_secret", "aws_secret_access_key",
    "STRIPE_KEY_2", "x-api-key", "refreshToken", "service.credentials", "Password",
    "smtp_password", "signing_key", "API_TOKEN_FILE_CONTENT", "apikey",
)  # fmt: skip
LABELLED_FORMS = (
    "{label}: {value}\n",
    "{label}={value}\n",
    "{label} = '{value}'",
    "**{label}:** {value}\n",
    'config {{"{label}": "{value}"}}',
    'config {{\\"{label}\\": \\"{value}\\"}}',
    'config {{\\\\\\"{label}\\\\\\":\\\\\\"{value}\\\\\\"}}',
)
# No ``x`` (a run of them reads as a mask), no ``. ) %`` ``$ /`` (a sentence's end, a
# variable, a path), so that a value is a credential whatever is glued after it.
CREDENTIAL_CHARS = ALNUM.replace("x", "").replace("X", "") + "#!+-_@^~"


def credential(rng: random.Random, n: int) -> str:
    """A credential without a shape of its own: a letter, then ``n - 1`` characters of
    ``CREDENTIAL_CHARS`` holding a digit and a symbol."""
    body = _with_digit(rng, CREDENTIAL_CHARS, n - 2) + rng.choice("#!+-_@^~")
    return rng.choice(string.ascii_letters.replace("x", "").replace("X", "")) + body


def _labelled(rng: random.Random) -> Sample:
    value = credential(rng, rng.randrange(12, 40))
    form = rng.choice(LABELLED_FORMS)
    text = form.format(label=rng.choice(SECRET_LABELS), value=value)
    return Sample("secret-field", value, text, text.replace(value, "[REDACTED:secret-field]"))


GENERATORS: dict[str, Callable[[random.Random], Sample]] = {
    "openai-key": _openai,
    "anthropic-key": _anthropic,
    "aws-access-key-id": _aws_key_id,
    "aws-secret-key": _aws_secret,
    "github-token": _github,
    "google-api-key": _google,
    "slack-token": _slack,
    "stripe-key": _stripe,
    "jwt": _jwt,
    "bearer-token": _bearer,
    "private-key": _private_key,
    "url-password": _url_password,
    "query-secret": _query_secret,
    "openrouter-key": _prefixed("openrouter-key", "sk-or-v1-", HEX, 64),
    "huggingface-token": _prefixed("huggingface-token", "hf_", ALNUM, 34),
    "groq-key": _prefixed("groq-key", "gsk_", ALNUM, 52),
    "xai-key": _prefixed("xai-key", "xai-", ALNUM, 80),
    "replicate-token": _prefixed("replicate-token", "r8_", ALNUM, 37),
    "databricks-token": _prefixed("databricks-token", "dapi", HEX, 32),
    "perplexity-key": _prefixed("perplexity-key", "pplx-", ALNUM, 48),
    "gitlab-token": _prefixed("gitlab-token", "glpat-", B64URL, 20),
    "npm-token": _prefixed("npm-token", "npm_", ALNUM, 36),
    "sendgrid-key": _sendgrid,
    "digitalocean-token": _digitalocean,
    "slack-webhook": _slack_webhook,
    "azure-account-key": _azure_account_key,
    "basic-auth": _basic_auth,
    "token-auth": _token_auth,
    "secret-field": _labelled,
}
KINDS: tuple[str, ...] = tuple(GENERATORS)


def fake(kind: str, seed: int = 0) -> Sample:
    """A fresh fake secret of ``kind``, the same for the same seed."""
    return GENERATORS[kind](random.Random(f"{kind}:{seed}"))


# Vendors' documented example values, known to every scanner as fakes.
AWS_EXAMPLE_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_EXAMPLE_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

SAMPLES: tuple[Sample, ...] = (
    _bare("aws-access-key-id", AWS_EXAMPLE_KEY_ID),
    Sample(
        "aws-secret-key",
        AWS_EXAMPLE_SECRET,
        f"aws_secret_access_key={AWS_EXAMPLE_SECRET}",
        "aws_secret_access_key=[REDACTED:aws-secret-key]",
    ),
    *(fake(kind, seed) for kind in KINDS for seed in (1, 2)),
)
"""Two samples of every kind, plus the AWS documentation examples."""

SECRETS: dict[str, str] = {f"{sample.kind}-{n}": sample.text for n, sample in enumerate(SAMPLES)}
"""Name → the text a secret appears in (the secret itself when its shape needs no context),
so that joining the values into one request still lets every one be recognised."""

SECRET_VALUES: dict[str, str] = {f"{s.kind}-{n}": s.secret for n, s in enumerate(SAMPLES)}
"""Name → just the secret part of the same samples, for the strictest leak checks."""

FAKE_OPENAI_KEY = fake("openai-key", 7).secret
FAKE_ANTHROPIC_KEY = fake("anthropic-key", 7).secret
"""Keys for tests that pass one to an SDK and then check no trace or cassette holds it."""

FILE_TOKEN_VARIABLE = "API_TOKEN_FILE_CONTENT"
FILE_TOKEN = "tfc-" + _pick(random.Random("file-token"), ALNUM, 36)
"""A variable whose name holds ``TOKEN`` as a word, not at its end, and its value, which
has no known shape: only the variable's name marks it."""
LOWER_AWS_SECRET = _pick(random.Random("lower-aws"), ALNUM + "/+", 40)
"""An AWS secret key an agent keeps under a lower-case ``aws_secret_access_key``: in
tool-call arguments (JSON carried in a string) and as a span attribute."""
NAMED_SECRET_VALUES: dict[str, str] = {
    FILE_TOKEN_VARIABLE: FILE_TOKEN,
    "aws_secret_access_key": LOWER_AWS_SECRET,
}
"""Secrets that only the name they sit under marks, by that name."""
