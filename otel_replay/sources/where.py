"""A ``--from`` address: which backend, where it listens, and what the path and query add.

``phoenix+http://HOST:PORT/PROJECT``, ``jaeger+https://HOST:PORT``,
``tempo+http://HOST:PORT``, ``clickhouse+http://HOST:PORT/DATABASE?table=otel_traces``:
the part before ``+`` names the backend, the rest is the URL it answers at. Credentials
written in the URL (``user:password@``) are taken out, so the name printed in errors and
kept in the cassette's provenance never carries them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit

from otel_replay.core.errors import ConfigError

__all__ = ["BACKENDS", "Where", "parse_where"]

BACKENDS = ("phoenix", "jaeger", "tempo", "clickhouse", "mlflow", "langfuse")


@dataclass(frozen=True, slots=True)
class Where:
    """A parsed ``--from``: ``base`` is the backend's root URL (``http://host:port``),
    ``path`` what followed it (project or database, without slashes), ``query`` the
    options after ``?``, and ``user`` / ``password`` what the URL itself carried."""

    backend: str
    base: str
    path: str = ""
    query: dict[str, str] = field(default_factory=dict)
    user: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """How errors and provenance name it: ``phoenix at http://host:port/project``."""
        return f"{self.backend} at {self.base}" + (f"/{self.path}" if self.path else "")


def parse_where(text: str) -> Where:
    """The backend and address of ``--from``; a ``ConfigError`` naming what is wrong."""
    kind, plus, rest = text.partition("+")
    usage = f"use one of {', '.join(f'{b}+http://HOST:PORT' for b in BACKENDS)}"
    if not plus or kind.lower() not in BACKENDS:
        raise ConfigError(f"--from {_safe(text)}: unknown backend; {usage}")
    try:
        parts = urlsplit(rest)
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"--from {_safe(text)}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--from {_safe(text)}: not an http(s) address; {usage}")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    base = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
    return Where(
        backend=kind.lower(),
        base=base,
        path=unquote(parts.path.strip("/")),
        query=dict(parse_qsl(parts.query)),
        user=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )


def _safe(text: str) -> str:
    """``text`` with any password in it hidden, for an error message."""
    head, at, tail = text.rpartition("@")
    if not at:
        return text
    scheme, sep, userinfo = head.partition("://")
    return f"{scheme}{sep}{userinfo.split(':', 1)[0]}:***@{tail}"
