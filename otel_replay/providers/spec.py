"""A provider's declaration: everything outside its wire format that otel-replay needs to
know about it, as data.

One :class:`ProviderSpec` per upstream otel-replay can forward to. ``api`` names the API
surface it speaks (the module that reads its bodies, ``gen_ai.provider.name``), so an
upstream serving another provider's API (Azure OpenAI serves OpenAI's) is a row of its
own with ``api="openai"``. :class:`Mount` rows say which gateway paths reach it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from otel_replay.streams.codec import StreamCodec
from otel_replay.streams.sse import SSE

__all__ = [
    "AWS_SIGV4",
    "BEARER",
    "PLACEHOLDER_REGION",
    "CredentialHeader",
    "Mount",
    "ProviderSpec",
]

BEARER = "bearer"
PLACEHOLDER_REGION = "us-east-1"
AWS_SIGV4 = "aws4-hmac-sha256"
"""The scheme of an AWS SigV4 ``Authorization``, whose credential is its access key id."""


@dataclass(frozen=True, slots=True)
class CredentialHeader:
    """A request header that carries a credential: the whole value (``x-api-key``), or
    the token after a scheme (``authorization: Bearer TOKEN``); for AWS SigV4, the
    access key id of ``Credential=KEY/date/region/service/aws4_request``."""

    name: str
    scheme: str | None = None

    def value(self, headers: Mapping[str, str]) -> str:
        """The credential in ``headers`` (lower-case names), or ``""``."""
        raw = headers.get(self.name, "")
        if self.scheme is None:
            return raw
        prefix = f"{self.scheme} "
        if not raw.lower().startswith(prefix):
            return ""
        token = raw[len(prefix) :].strip()
        if self.scheme == AWS_SIGV4:
            _, _, scope = token.partition("Credential=")
            return scope.partition("/")[0].strip() if scope else ""
        return token

    def carried(self, name: str, value: str) -> bool:
        """Whether a header (lower-case name) is this credential header."""
        return name == self.name and (
            self.scheme is None or value.lower().startswith(f"{self.scheme} ")
        )


@dataclass(frozen=True, slots=True)
class Mount:
    """Gateway paths that reach one upstream.

    A request belongs to a mount when its path starts with ``prefix`` and the mount
    recognises it: a path matching ``pattern`` always does (an API whose paths share a
    prefix with another's, such as Gemini's ``/v1/models/{model}:generateContent``); a
    path (from ``/v1`` on) starting with one of ``paths`` does;
    otherwise one of ``headers`` present does; otherwise a mount with ``rest`` takes what
    is left under its prefix. ``strip`` is removed from the path before the provider reads it and
    before it is forwarded (a named upstream under ``/u/NAME``), and ``under`` is put before
    it (a client whose base URL carries the API's version: ``/messages`` is ``/v1/messages``);
    ``reads`` turns the path and query as received into the path the provider reads.
    """

    prefix: str
    paths: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    headers: tuple[str, ...] = ()
    rest: bool = True
    strip: str = ""
    under: str = ""
    reads: Callable[[str, Mapping[str, str]], str] | None = None


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """One upstream, declared once.

    ``base_env`` is the variable its SDK reads for the base URL; the agent is given the
    gateway's URL plus ``agent_path`` there, and the caller's own value is the default
    upstream, else ``default_base`` (None: the endpoint is per customer and must be
    named). ``base_suffixes`` are endings of a base URL that repeat the start of the
    gateway path (``/v1``), dropped when the two are joined.
    """

    name: str
    """The upstream's name: ``--upstream-NAME``, the upstream request's ``provider``."""
    api: str
    """The API surface it speaks; also its ``gen_ai.provider.name``."""
    title: str
    mounts: tuple[Mount, ...]
    base_env: str
    surface: str = ""
    also_base_env: tuple[str, ...] = ()
    """Other variables that clients read for the same base URL (Claude Code on Bedrock
    reads ``ANTHROPIC_BEDROCK_BASE_URL``; frameworks read older names, litellm's
    ``OPENAI_API_BASE``): each is given the gateway's URL too."""
    """Where its API surface lives, ``module:attribute`` (once per ``api``)."""
    agent_path: str = ""
    default_base: str | None = None
    base_example: str = ""
    base_suffixes: tuple[str, ...] = ()
    option_help: str | None = None
    """Help of its ``--upstream-NAME`` option; None: no option of its own."""
    credential_env: tuple[str, ...] = ()
    """Variables holding the caller's credentials for it (auto mode's own-key check)."""
    credential_headers: tuple[CredentialHeader, ...] = ()
    key_kinds: tuple[str, ...] = ()
    """Shapes of its keys, as ``redaction.shapes`` names them (``openai-key``): a key of
    this shape is never sent to another upstream."""
    placeholder_env: tuple[str, ...] = ()
    """Key variables its SDK refuses to start without; given a placeholder in replay."""
    kept_headers: frozenset[str] = frozenset()
    kept_prefixes: tuple[str, ...] = ()
    codec: StreamCodec = SSE
    semconv_names: tuple[str, ...] = ()
    """``gen_ai.provider.name`` / ``gen_ai.system`` values that mean this upstream."""
    sdk_modules: tuple[str, ...] = ()
    """Top-level modules of its official SDK (whose error classes a trace may name)."""
    egress_hosts: tuple[str, ...] = ()
    """Host patterns (``fnmatch``) of its public API."""
    region_env: tuple[str, ...] = ()
    """Variables its SDK reads a region from. In strict replay, when the caller sets none,
    the first is given :data:`PLACEHOLDER_REGION` (nothing goes live: the region only
    names the signing scope), so an SDK that insists on a region starts in CI."""
    signing_name: str | None = None
    """The AWS service its requests are signed for (SigV4): a live call is re-signed for
    the real endpoint with the gateway's own AWS credentials. ``default_base`` may then
    hold ``{region}``, the region the agent signed for."""
    regional: Callable[[str], str] | None = None
    """The public endpoint serving a gateway path, where the caller names no base URL
    (Vertex AI's host follows the location the path names); else ``default_base``."""
    agent_defaults: Callable[[Mapping[str, str], str], Mapping[str, str]] | None = None
    """The variables its SDK needs besides the base URL, from the caller's environment
    and the mode (a project or location to name in strict replay)."""
    minted_credentials: bool = False
    """Its SDK mints short-lived tokens from Google's Application Default Credentials: in
    replay an agent holding none is given placeholder credentials, and in auto mode any
    token but the placeholder is the caller's own."""

    def public_base(self, path: str) -> str | None:
        """Its public endpoint for a gateway path."""
        return self.regional(path) if self.regional is not None else self.default_base

    def base_envs(self) -> tuple[str, ...]:
        """Every variable a client reads this upstream's base URL from."""
        return (self.base_env, *self.also_base_env)

    def join(self, base: str, path: str) -> str:
        """The upstream URL for a gateway path forwarded to ``base``."""
        base = base.rstrip("/")
        for suffix in self.base_suffixes:
            head = "/" + suffix.strip("/").split("/", 1)[0]
            if base.endswith(suffix) and path.startswith(head):
                return base[: -len(suffix)] + path
        return base + path

    def missing_base(self) -> str:
        """What to set when a live call finds no base URL for this upstream."""
        where = f" ({self.base_example})" if self.base_example else ""
        option = f", or pass --upstream-{self.name} URL" if self.option_help else ""
        return (
            f"no {self.title} endpoint to forward to: set {self.base_env}{where} "
            f"before starting otel-replay{option}"
        )
