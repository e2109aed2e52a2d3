"""Which names mark a secret: environment variables, attribute and field names by word,
and ``.env`` entries that are plainly configuration (a model name, a base URL) and not
credentials."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

from otel_replay.core.envvars import (
    DESCRIBING_WORDS,
    IDENTIFIER_KEYS,
    SECRET_NAME_SUFFIXES,
    SECRET_NAME_WORDS,
    SECRET_WORDS,
)
from otel_replay.redaction.keyed import PlaceholderKey, placeholder

__all__ = [
    "credential_like",
    "is_secret_field",
    "is_secret_name",
    "looks_like_settings",
    "name_words",
    "parse_dotenv",
    "redact_argv",
]


_NUMBERED = re.compile(r"_?[0-9]+$")
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def name_words(name: str) -> list[str]:
    """A name's words, upper-cased: split at every character that is no letter or digit
    and at camelCase (``apiKey`` → ``API``, ``KEY``; ``APIKey`` → ``API``, ``KEY``)."""
    return [word.upper() for word in _WORDS.findall(name)]


@functools.lru_cache(maxsize=4096)  # each block's redactor reads the same environment
def is_secret_name(name: str) -> bool:
    """Whether a name (an environment variable's, an attribute's) marks its value as a
    secret: it holds ``KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``, ``CREDENTIALS``... as
    a word anywhere (``API_TOKEN_FILE_CONTENT``, ``aws_secret_access_key``,
    ``clientSecret``) unless the next word says it describes one (``TOKEN_COUNT``,
    ``token_type``); it ends in ``_PASS`` or ``_PAT`` (``DB_PASS``, ``GITHUB_PAT``), also
    when numbered (``STRIPE_KEY_2``); or it holds ``SECRET`` or ``PASSWORD`` anywhere
    (``MYSECRETVALUE``)."""
    upper = name.upper()
    if any(word in upper for word in SECRET_NAME_WORDS):
        return True
    if ("_" + _NUMBERED.sub("", upper)).endswith(SECRET_NAME_SUFFIXES):
        return True
    return _holds_secret_word(name_words(name))


def _holds_secret_word(words: list[str]) -> bool:
    """Whether a secret word is among ``words``, not followed by one that describes it
    (``TOKEN_COUNT``), nor a ``KEY`` that the word before makes an identifier
    (``prompt_cache_key``)."""
    return any(
        word in SECRET_WORDS
        and (i + 1 == len(words) or words[i + 1] not in DESCRIBING_WORDS)
        and not (word == "KEY" and i and words[i - 1] in IDENTIFIER_KEYS)
        for i, word in enumerate(words)
    )


_GENERIC = (["KEY"], ["TOKEN"])
"""Field names too common to mark a secret alone: a key/value pair's ``key``, a
log-probability's ``token``."""
_CREDENTIAL = re.compile(r"[^\s]{8,}")
_PLACEHOLDER = re.compile(r"\[REDACTED:[A-Za-z0-9_.:-]+\]")


def is_secret_field(name: str) -> bool:
    """Whether a field or attribute name marks its value as a secret: it holds a secret
    word (:func:`is_secret_name`'s words: ``aws_secret_access_key``, ``clientSecret``),
    but is not a lone ``key`` or ``token``."""
    words = name_words(name)
    return words not in _GENERIC and _holds_secret_word(words)


def credential_like(value: str) -> bool:
    """Whether a value under a secret's name may be the secret: 8 characters or more,
    no spaces, not already a placeholder."""
    return _CREDENTIAL.fullmatch(value) is not None and _PLACEHOLDER.fullmatch(value) is None


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


def redact_argv(
    argv: Sequence[str], redact: Callable[[str], str], key: PlaceholderKey | None = None
) -> list[str]:
    """A command line as it may be written down: every argument through ``redact``, and
    the value after an option named like a secret (``--api-key VALUE``,
    ``--db-password VALUE``) replaced whatever it looks like (keyed with ``key``)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next and not arg.startswith("-"):
            out.append(placeholder("argument", arg, key))
        else:
            out.append(redact(arg))
        hide_next = _SECRET_OPTION.fullmatch(arg) is not None
    return out
