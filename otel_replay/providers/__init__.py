"""Provider API surfaces. One module per provider; a new provider is a new module.

``provider_for(path, headers)`` picks the provider that owns a gateway request;
``get(name)`` returns a provider by name; ``upstream_for(path, provider)`` names the
upstream a request is forwarded to (``"azure"`` for Azure OpenAI's ``/openai/...`` paths).
"""

from __future__ import annotations

from collections.abc import Mapping

from otel_replay.core.errors import ConfigError
from otel_replay.providers.base import OutputView, Provider

__all__ = ["OutputView", "Provider", "get", "provider_for", "upstream_for"]

AZURE_PREFIX = "/openai/"


def _registry() -> dict[str, Provider]:
    from otel_replay.providers.anthropic import ANTHROPIC
    from otel_replay.providers.openai import OPENAI

    return {OPENAI.name: OPENAI, ANTHROPIC.name: ANTHROPIC}


_PROVIDERS: dict[str, Provider] | None = None


def all_providers() -> dict[str, Provider]:
    global _PROVIDERS
    if _PROVIDERS is None:
        _PROVIDERS = _registry()
    return _PROVIDERS


def get(name: str) -> Provider:
    try:
        return all_providers()[name]
    except KeyError:
        known = ", ".join(sorted(all_providers()))
        raise ConfigError(f"unknown provider {name!r} (known: {known})") from None


def provider_for(path: str, headers: Mapping[str, str]) -> Provider:
    """The provider that owns a request to the gateway.

    Both SDKs put their API under ``/v1``; ``/v1/messages*`` and any request carrying
    Anthropic's headers belong to Anthropic, everything else to OpenAI — Azure OpenAI's
    ``/openai/...`` paths included.
    """
    providers = all_providers()
    if path.startswith(AZURE_PREFIX):
        return providers["openai"]
    anthropic = providers["anthropic"]
    return anthropic if anthropic.claims(path, headers) else providers["openai"]


def upstream_for(path: str, provider: str) -> str:
    """The upstream a gateway request goes to: ``"azure"`` for Azure OpenAI's paths
    (provider ``openai``, but a resource endpoint of its own), else the provider's."""
    return "azure" if path.startswith(AZURE_PREFIX) else provider
