"""A secret after a label that names one, in free text: ``DB_PASSWORD=...``,
``aws_secret_access_key: ...``, ``"client_secret": "..."`` in prose, in JSON, in JSON held
in a string. Credential-like values never survive; words, numbers, masks, placeholders,
references and the labels that only describe a secret are left as they are; the
recordings the project ships read the same."""

from __future__ import annotations

import base64
import json
import random
import re
import string
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from secrets_corpus import SECRET_LABELS, credential

from otel_replay.redaction.labelled import looks_like_credential
from otel_replay.redaction.redact import PATTERNS_ONLY, Redactor

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = "[REDACTED:secret-field]"


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("aws_secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
         "aws_secret_access_key: [REDACTED:aws-secret-key]"),
        ("aws_secret_access_key: wJalrXUtnFEMI/K7MDENG", f"aws_secret_access_key: {PLACEHOLDER}"),
        ("DB_PASSWORD=hunter2-Xk9qLm", f"DB_PASSWORD={PLACEHOLDER}"),
        ("export DB_PASS='hunter2-Xk9qLm'", f"export DB_PASS='{PLACEHOLDER}'"),
        ("GITHUB_PAT: Xk9qLmZ2pW8r", f"GITHUB_PAT: {PLACEHOLDER}"),
        ('say {\\"client_secret\\": \\"Zx81-qPLm0-vvA\\"} ok',
         f'say {{\\"client_secret\\": \\"{PLACEHOLDER}\\"}} ok'),
        ("(password: Summer2024!).", f"(password: {PLACEHOLDER})."),
        ("**Password:** P@ssw0rd", f"**Password:** {PLACEHOLDER}"),
        ("x-api-key: 3f9a1c2b7d8e4f60a1b2c3d4e5f60718", f"x-api-key: {PLACEHOLDER}"),
        ("refreshToken := Zx81qPLm0vvA9", f"refreshToken := {PLACEHOLDER}"),
        ("'smtp_password' => 'Zx81qPLm0vvA9'", f"'smtp_password' => '{PLACEHOLDER}'"),
        ("the credentials: password: Xk9#mPq2vL", f"the credentials: password: {PLACEHOLDER}"),
        ("password: admin: Xk9#mPq2vL", f"password: admin: {PLACEHOLDER}"),
        # a value of a known shape is named as such
        ("GITHUB_TOKEN: ghp_" + "a1B2" * 9, "GITHUB_TOKEN: [REDACTED:github-token]"),
        ("private_key: -----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----",
         "private_key: [REDACTED:private-key]"),
        ('{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQ\\n-----END PRIVATE KEY-----"}',
         '{"private_key": "[REDACTED:private-key]"}'),
    ],
)  # fmt: skip
def test_a_credential_after_a_secret_label_is_redacted(text: str, redacted: str) -> None:
    assert PATTERNS_ONLY.text(text) == redacted


FALSE_POSITIVES = [
    "token count: 12",
    "max_tokens=512",
    "max_tokens=51200000",
    '"usage": {"prompt_tokens": 93, "completion_tokens": 4300000}',
    "password: ********",
    "password: <your password>",
    "key: value",
    "key: Xk9#mPq2vL",  # a lone ``key`` or ``token`` names no secret
    "api_key: YOUR_API_KEY",
    'api_key=os.environ["OPENAI_API_KEY"]',
    "api_key=os.getenv('OPENAI_API_KEY')",
    "password=get_password(user)",
    "password: SecretStr = Field(...)",
    "secret_key: settings.SECRET_KEY",
    "secret: true",
    "token_type: bearer",
    "token_type: Xk9#mPq2vL",
    "prompt_cache_key: abc",
    "prompt_cache_key: Xk9#mPq2vL",
    "password_hint: Xk9#mPq2vL",
    "[REDACTED:openai-key]",
    "api_key: [REDACTED:openai-key]",
    "password: correct horse battery staple",
    "password: correct-horse-battery-staple",
    "api_key: your-api-key-here",
    "api_key: sk-...abcd",
    "api_key=sk-xxxxxxxxxxxxxxxxxxxxxxxx",
    "api_key: $OPENAI_API_KEY",
    "api_key: ${OPENAI_API_KEY}",
    "api_key: %OPENAI_API_KEY%",
    "password: null",
    "password: undefined",
    "password: aaaaaaaaaaaa",
    "secret: {{ secrets.API_KEY }}",
    "api_key: https://example.com/v1/keys",
    "secret_created: 2024-05-01T12:00:00Z",
    "secret: internationalization",
    "the secret: plainword",
    "secretary: Xk9#mPq2vL",
    "credentials: ~/.config/gcloud/adc.json",
]


@pytest.mark.parametrize("text", FALSE_POSITIVES)
def test_what_only_looks_like_a_labelled_secret_is_left_alone(text: str) -> None:
    assert PATTERNS_ONLY.text(text) == text
    assert Redactor().json({"content": text}) == {"content": text}


# Free text around a labelled secret: ordinary words and the labels' look-alikes.
PROSE = st.lists(
    st.sampled_from(
        ["the", "agent", "ran", "tests", "and", "saw", "it.", "Done,", "é", "—", "\n", "token",
         "tokens", "keys", "secret", "secretary", "passwords", "max_tokens=512", "key: value",
         "token_count: 12", "prompt_cache_key: abc", "[REDACTED:x]", "(see", "docs)."]
    ),
    max_size=10,
).map(" ".join)  # fmt: skip
# ``label: value``, ``label=value``, a YAML or Python assignment, Markdown, Go, PHP, and a
# JSON member written in prose (escaped once or twice below, as JSON in JSON).
FORMS = [
    "{label}: {value}",
    "{label}={value}",
    "{label} = '{value}'",
    "**{label}:** {value}",
    "{label} := {value}",
    "'{label}' => '{value}'",
    '{{"{label}": "{value}"}}',
    '{{"{label}":"{value}", "n": 1}}',
]


def _credential(family: str, seed: int) -> str:
    """A credential of a common family; each holds a letter and a digit (letters alone
    may read as words, digits alone as a number: ``looks_like_credential``)."""
    rng = random.Random(seed)
    if family == "hex":
        value = rng.randbytes(rng.randrange(8, 33)).hex()
    elif family == "base64":
        value = base64.b64encode(rng.randbytes(rng.randrange(12, 49))).decode()
    elif family == "base64url":
        value = base64.urlsafe_b64encode(rng.randbytes(rng.randrange(12, 49))).decode()
    elif family == "uuid":
        value = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    elif family == "password":
        value = rng.choice(["Summer", "dragon", "Coffee"]) + str(rng.randrange(10, 9999)) + "!"
    else:
        value = credential(rng, rng.randrange(12, 40))
    if not any(c.isdigit() for c in value):
        value += rng.choice(string.digits)
    if not any(c.isalpha() for c in value):
        value = rng.choice("abcdef") + value
    return value.rstrip("=")


CREDENTIALS = st.builds(
    _credential,
    st.sampled_from(["hex", "base64", "base64url", "uuid", "password", "mixed"]),
    st.integers(0, 10**9),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=PROSE,
    after=PROSE,
    label=st.sampled_from(SECRET_LABELS),
    form=st.sampled_from(FORMS),
    value=CREDENTIALS,
    depth=st.sampled_from([0, 1, 2]),
)
def test_a_credential_after_any_label_never_survives(
    before: str, after: str, label: str, form: str, value: str, depth: int
) -> None:
    """Whatever the prose around it and however deep in JSON the text sits, the value
    becomes the placeholder, the rest of the text is kept, and JSON stays JSON."""
    text = f"{before} {form.format(label=label, value=value)} {after}"
    expected = text.replace(value, PLACEHOLDER)
    body = text
    for _ in range(depth):  # a raw request body, then JSON in a string in JSON
        body = json.dumps({"content": body, "n": 1})
    out = PATTERNS_ONLY.text(body)
    assert value not in out
    for _ in range(depth):
        out = json.loads(out)["content"]
    assert _as_field(out) == expected
    structured = PATTERNS_ONLY.json({"content": text})
    assert isinstance(structured, dict) and _as_field(structured["content"]) == expected


def _as_field(text: str) -> str:
    """An AWS secret key's own placeholder (40 characters after its name) read as the
    field's."""
    return text.replace("[REDACTED:aws-secret-key]", PLACEHOLDER)


def _words(seed: int) -> str:
    rng = random.Random(seed)
    words = ["weather", "service", "key", "Lisbon", "staging", "default", "Admin", "config"]
    return rng.choice("-_.").join(rng.choice(words) for _ in range(rng.randrange(1, 4)))


# Values that are no credential: short, numbers, versions, dates, words and identifiers,
# masks, placeholders, references to variables, constants, code, paths, templates, URLs.
NON_CREDENTIALS = (
    st.text(string.ascii_letters + string.digits + "-_#!", max_size=7)
    | st.sampled_from(["max_tokens=51200000", "TOKEN_COUNT=1234567"])
    | st.integers(0, 10**12).map(str)
    | st.builds("{}.{}.{}".format, st.integers(0, 99), st.integers(0, 99), st.integers(0, 999))
    | st.dates().map(str)
    | st.integers(0, 10**6).map(_words)
    | st.sampled_from(["correcthorse", "YOUR_API_KEY", "os.environ", "settings.SECRET_KEY",
                       "process.env.OPENAI_API_KEY", "get_secret()", "$OPENAI_API_KEY",
                       "%API_KEY%", "null", "undefined", "true", "false", "sk-...abcd",
                       "sk-xxxxxxxxxxxxxxxxxxxx", "[REDACTED:openai-key]", "<your-api-key>",
                       "{{ secrets.KEY }}", "${DB_PASSWORD}", "~/.ssh/id_rsa",
                       "https://vault.example.com/v1/secret", "your-token-here"])
    | st.builds(lambda c, n: c * n, st.sampled_from("*x•0a-"), st.integers(8, 40))
)  # fmt: skip


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=PROSE,
    after=PROSE,
    label=st.sampled_from(SECRET_LABELS),
    form=st.sampled_from(FORMS[:6]),  # JSON members are values whatever they look like
    value=NON_CREDENTIALS,
)
def test_a_value_that_is_no_credential_is_left_alone(
    before: str, after: str, label: str, form: str, value: str
) -> None:
    text = f"{before} {form.format(label=label, value=value)} {after}"
    if FIELD_NAMES.search(label) and form in ("{label}={value}", "{label} = '{value}'"):
        # the names the secret fields have always read (``password=``, ``client_secret=``)
        # take any value that is not plainly none (``labelled.is_value``)
        return
    assert PATTERNS_ONLY.text(text) == text


FIELD_NAMES = re.compile(
    r"(?i:passw(?:or)?d|private[_-]?key|secret(?:[_-]?(?:access[_-]?)?key)?|api[_-]?key"
    r"|[_-]token|credentials?)$"
)
"""The names ``shapes``'s secret fields read before ``=`` or a JSON member's colon."""


DESCRIBING_LABELS = ["token_count", "max_tokens", "token_type", "prompt_cache_key",
                     "idempotency_key", "passwordHint", "secret_name", "api_key_id", "key",
                     "token", "KEY", "Token", "secretary", "keyboard", "monkey"]  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(label=st.sampled_from(DESCRIBING_LABELS), form=st.sampled_from(FORMS), value=CREDENTIALS)
def test_a_label_that_only_describes_a_secret_marks_none(label: str, form: str, value: str) -> None:
    text = f"see {form.format(label=label, value=value)} here"
    assert PATTERNS_ONLY.text(text) == text


@settings(max_examples=100, deadline=None)
@given(
    label=st.sampled_from([*SECRET_LABELS, *DESCRIBING_LABELS]),
    value=CREDENTIALS | NON_CREDENTIALS | st.text(max_size=30),
)
def test_a_labelled_field_in_a_body_is_redacted_as_its_json_text_is(label: str, value: str) -> None:
    """The cassette holds the parsed body, the trace its text: both redact alike."""
    redactor = Redactor()
    text = redactor.text(json.dumps({label: value}, ensure_ascii=False))
    try:
        expected = json.loads(text)
    except ValueError:  # the text's redaction broke its JSON: the field is redacted whole
        expected = {label: PLACEHOLDER}
    assert redactor.json({label: value}) == expected


def test_the_credential_test_reads_common_families_as_credentials() -> None:
    """Thresholds: every family above passes for 2,000 seeds each (hex, base64, UUIDs,
    passwords such as ``Summer2024!``), and prose-like values do not."""
    for family in ["hex", "base64", "base64url", "uuid", "password", "mixed"]:
        assert all(looks_like_credential(_credential(family, seed)) for seed in range(2000))
    for value in ["internationalization", "weather-service-key", "gpt4o", "aaaa1111",
                  "abababab12", "YOUR_API_KEY", "12345678901", "2024-05-01"]:  # fmt: skip
        assert not looks_like_credential(value), value


def _shipped_recordings() -> list[Path]:
    """Cassettes, span files, traces and recorded requests the project ships."""
    return sorted(
        [
            *ROOT.glob("examples/*/cassettes/*.json"),
            *ROOT.glob("examples/*/*.jsonl"),
            *ROOT.glob("tests/traces/*.jsonl"),
            *ROOT.glob("tests/backend_fixtures/*.json"),
            *ROOT.glob("benchmarks/*_request.json"),
        ]
    )


@pytest.mark.parametrize("path", _shipped_recordings(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_recordings_the_project_ships_read_the_same(path: Path) -> None:
    """No false positive in recorded bodies: redacting them again changes nothing, as
    text (a trace line, a raw body) and as JSON (what a cassette holds)."""
    text = path.read_text(encoding="utf-8").replace("{{CREATED}}", "1700000000")
    lines = text.splitlines() if path.suffix == ".jsonl" else [text]
    for line in lines:
        assert PATTERNS_ONLY.text(line) == line
        if line.strip():
            doc = json.loads(line)
            assert Redactor().json(doc) == doc
