"""Which names mark a secret: environment variables by suffix, and ``.env`` entries that
are plainly configuration (a model name, a base URL) and not credentials."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from otel_replay.core.envvars import SECRET_NAME_SUFFIXES, SECRET_NAME_WORDS

__all__ = ["is_secret_name", "looks_like_settings", "parse_dotenv", "redact_argv"]


_NUMBERED = re.compile(r"_?[0-9]+$")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name marks its value as a secret: it ends in
    ``_KEY``, ``_TOKEN``, ``_PASS``, ``_CREDENTIALS``... (``OPENAI_API_KEY``,
    ``DB_PASS``, ``GITHUB_PAT``), also when numbered (``STRIPE_KEY_2``), or it holds
    ``SECRET`` or ``PASSWORD`` anywhere (``SECRET_KEY_BASE``)."""
    upper = name.upper()
    if any(word in upper for word in SECRET_NAME_WORDS):
        return True
    return ("_" + _NUMBERED.sub("", upper)).endswith(SECRET_NAME_SUFFIXES)


# ``.env`` entries whose name says they configure rather than authenticate: a model name
# or a base URL redacted at record time would make every replay without that ``.env`` miss.
_SETTING_WORDS = frozenset(
    {
        "MODEL",
        "URL",
        "HOST",
        "PORT",
        "REGION",
        "ENDPOINT",
        "VERSION",
        "MODE",
        "LEVEL",
        "ENV",
        "ENVIRONMENT",
        "DEBUG",
        "PROTOCOL",
        "TIMEOUT",
        "PATH",
        "DIR",
        "LOCALE",
        "LANG",
        "TZ",
        "DEPLOYMENT",
        "TEMPERATURE",
        "RETRIES",
    }
)
_PLAIN_VALUE_RE = re.compile(r"(?i:true|false|yes|no|on|off|none|null|-?\d+(?:\.\d+)?)")


def looks_like_settings(name: str, value: str) -> bool:
    """Whether a ``.env`` entry is plainly configuration, not a credential: a number or
    boolean, a URL without credentials, or a variable named like a setting."""
    if _PLAIN_VALUE_RE.fullmatch(value.strip()):
        return True
    if "://" in value and "@" not in value and "?" not in value:
        return True
    return bool(_SETTING_WORDS.intersection(name.upper().split("_")))


def parse_dotenv(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines of a ``.env`` file: ``export`` prefixes, quotes and comments."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not name:
            continue
        values[name] = _dotenv_value(value.strip())
    return values


def _dotenv_value(value: str) -> str:
    if value[:1] in ("'", '"'):
        quote = value[0]
        end = value.find(quote, 1)
        while quote == '"' and end > 0 and value[end - 1] == "\\":
            end = value.find(quote, end + 1)
        inner = value[1:end] if end > 0 else value[1:]
        if quote == '"':
            inner = inner.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        return inner
    comment = re.search(r"\s#", value)
    return value[: comment.start()].rstrip() if comment else value


_SECRET_OPTION = re.compile(
    r"--?[A-Za-z0-9_.-]*(?:password|passwd|secret|token|api[_-]?key|apikey|credentials?)",
    re.IGNORECASE,
)


def redact_argv(argv: Sequence[str], redact: Callable[[str], str]) -> list[str]:
    """A command line as it may be written down: every argument through ``redact``, and
    the value after an option named like a secret (``--api-key VALUE``,
    ``--db-password VALUE``) replaced whatever it looks like."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next and not arg.startswith("-"):
            out.append("[REDACTED:argument]")
        else:
            out.append(redact(arg))
        hide_next = _SECRET_OPTION.fullmatch(arg) is not None
    return out
