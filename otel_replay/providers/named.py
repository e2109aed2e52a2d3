"""Named OpenAI-compatible upstreams: one gateway, several hosts (Groq, Mistral, DeepSeek,
OpenRouter, Together, Fireworks, xAI, Ollama, vLLM, ...), each under ``/u/NAME``.

``--upstream NAME=URL`` names one. The agent reaches it at ``http://gateway/u/NAME/v1``
(given to it as ``NAME_BASE_URL``); the gateway forwards what follows ``/u/NAME`` to URL
with only the bearer key, and records the call as an OpenAI call whose endpoint keeps
``/u/NAME`` — so recordings of two upstreams never answer each other, and the span's
``gen_ai.provider.name`` is the host's semantic-convention name (``groq``, ``mistral_ai``,
``x_ai``, ...) or else NAME.
"""

from __future__ import annotations

import functools
import re
from argparse import ArgumentTypeError
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from otel_replay.providers.spec import BEARER, CredentialHeader, Mount, ProviderSpec

__all__ = [
    "KNOWN",
    "NAMED_PREFIX",
    "BadUpstream",
    "named_prefix",
    "named_upstream",
    "parse_upstream",
    "parse_upstreams",
    "semconv_name",
]

NAMED_PREFIX = "/u/"
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")


class Host(NamedTuple):
    semconv: str
    """Its ``gen_ai.provider.name``."""
    base: str | None
    """Its public base URL (None: per deployment)."""
    egress: tuple[str, ...] = ()


KNOWN: Mapping[str, Host] = {
    "groq": Host("groq", "https://api.groq.com/openai/v1", ("api.groq.com",)),
    "mistral": Host("mistral_ai", "https://api.mistral.ai/v1", ("api.mistral.ai",)),
    "deepseek": Host("deepseek", "https://api.deepseek.com/v1", ("api.deepseek.com",)),
    "openrouter": Host("openrouter", "https://openrouter.ai/api/v1", ("openrouter.ai",)),
    "together": Host("together_ai", "https://api.together.xyz/v1", ("api.together.xyz",)),
    "fireworks": Host("fireworks", "https://api.fireworks.ai/inference/v1", ("api.fireworks.ai",)),
    "xai": Host("x_ai", "https://api.x.ai/v1", ("api.x.ai",)),
    "perplexity": Host("perplexity", "https://api.perplexity.ai", ("api.perplexity.ai",)),
    "ollama": Host("ollama", "http://localhost:11434/v1"),
    "vllm": Host("vllm", None),
}
"""OpenAI-compatible hosts otel-replay knows by name."""

_OPENAI_KEPT = frozenset(
    {"content-type", "retry-after", "retry-after-ms", "x-should-retry", "x-request-id"}
)


def _check(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"upstream name {name!r}: use lower-case letters, digits, '-' and '_' (e.g. groq)"
        )
    return name


class BadUpstream(ArgumentTypeError, ValueError):
    """A ``--upstream`` value that is not ``NAME=URL`` (argparse shows the message as is)."""


def parse_upstream(text: str) -> tuple[str, str]:
    """``NAME=URL`` as (name, url); a known host's NAME alone means its public URL.
    :class:`BadUpstream` saying what is wrong."""
    name, sep, url = text.partition("=")
    name, url = name.strip().lower(), url.strip()
    if not sep and name in KNOWN and KNOWN[name].base:
        return name, str(KNOWN[name].base)
    if not url:
        example = "groq=https://api.groq.com/openai/v1"
        raise BadUpstream(f"--upstream {text!r}: give NAME=URL (e.g. {example})")
    if not url.startswith(("http://", "https://")):
        raise BadUpstream(f"--upstream {text!r}: the URL must start with http:// or https://")
    try:
        return _check(name), url
    except ValueError as exc:
        raise BadUpstream(f"--upstream {text!r}: {exc}") from None


def parse_upstreams(texts: Iterable[str]) -> dict[str, str]:
    """Repeated ``--upstream NAME=URL`` values by name; ValueError for a bad one or a
    name given twice."""
    named: dict[str, str] = {}
    for text in texts:
        name, url = parse_upstream(text)
        if name in named and named[name] != url:
            raise ValueError(f"--upstream {name}: given twice ({named[name]}, {url})")
        named[name] = url
    return named


def named_prefix(path: str) -> str:
    """``/u/NAME`` when a gateway path or an endpoint is a named upstream's, else ``""``."""
    if not path.startswith(NAMED_PREFIX):
        return ""
    name = path[len(NAMED_PREFIX) :].partition("/")[0]
    return NAMED_PREFIX + name if _NAME.fullmatch(name) else ""


def semconv_name(name: str) -> str:
    """``gen_ai.provider.name`` of the upstream called ``name``."""
    host = KNOWN.get(name)
    return host.semconv if host is not None else name


def _env_name(name: str) -> str:
    return re.sub(r"[^A-Z0-9]", "_", name.upper())


@functools.lru_cache(maxsize=256)
def named_upstream(name: str) -> ProviderSpec:
    """The declaration of the OpenAI-compatible upstream called ``name``."""
    _check(name)
    prefix = NAMED_PREFIX + name
    host = KNOWN.get(name, Host(name, None))

    def reads(path: str, query: Mapping[str, str]) -> str:
        return prefix + path  # the endpoint keeps the upstream it is for

    env = _env_name(name)
    return ProviderSpec(
        name=name,
        api="openai",
        title=name,
        mounts=(Mount(prefix + "/", strip=prefix, reads=reads),),
        base_env=f"{env}_BASE_URL",
        agent_path=prefix + "/v1",
        default_base=host.base,
        base_suffixes=("/v1",),
        credential_env=(f"{env}_API_KEY",),
        credential_headers=(CredentialHeader("authorization", BEARER),),
        placeholder_env=(f"{env}_API_KEY",),
        kept_headers=_OPENAI_KEPT,
        kept_prefixes=("x-ratelimit-",),
        semconv_names=(host.semconv,),
        egress_hosts=host.egress,
    )
