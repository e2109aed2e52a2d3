"""The API surfaces (one :class:`~otel_replay.providers.base.Provider` per API), found
by what names or reaches them.

``get(name)`` imports a surface when first asked for; ``provider_for(path, headers)``
picks the one that owns a request to the gateway, through ``ROUTER`` (a gateway path to
its surface and upstream). The names spans give providers go both ways:
``semconv_name`` is an exchange's ``gen_ai.provider.name``, ``surface_name`` and
``api_named`` read one back. ``match_endpoint`` and ``match_model`` give an endpoint and
a model as matching compares them, whatever provider's they are.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from otel_replay.core.errors import ConfigError
from otel_replay.providers import azure, bedrock_paths, gemini_request, named, vertex
from otel_replay.providers.base import Provider
from otel_replay.providers.named import KNOWN, NAMED_PREFIX, named_prefix, named_upstream
from otel_replay.providers.parts import strip_prefix
from otel_replay.providers.router import Route, Router
from otel_replay.providers.table import PROVIDERS

__all__ = [
    "ROUTER",
    "all_providers",
    "api_named",
    "get",
    "match_endpoint",
    "match_model",
    "provider_for",
    "semconv_name",
    "semconv_names",
    "surface_name",
]

_SURFACES = {row.api: row.surface for row in PROVIDERS if row.surface}
"""Each API surface's module and name, imported when first asked for."""
_LOADED: dict[str, Provider] = {}


def all_providers() -> dict[str, Provider]:
    """Every API surface, imported now."""
    return {name: get(name) for name in _SURFACES}


def get(name: str) -> Provider:
    """The API surface called ``name`` (``openai``, ``anthropic``, ``gcp.gemini``,
    ``aws.bedrock``); :class:`ConfigError` for any other name."""
    provider = _LOADED.get(name)
    if provider is None:
        surface = _SURFACES.get(name)
        if surface is None:
            known = ", ".join(sorted(_SURFACES))
            raise ConfigError(f"unknown provider {name!r} (known: {known})")
        module, _, attribute = surface.partition(":")
        provider = _LOADED[name] = getattr(importlib.import_module(module), attribute)
    return provider


# -- by the request ----------------------------------------------------------------------

ROUTER = Router(PROVIDERS, named=named_upstream)


def _route(path: str, headers: Mapping[str, str]) -> Route | None:
    """The route of a path as received, else of the path from ``/v1`` on (a recorded
    endpoint behind a base URL with a prefix of its own)."""
    return ROUTER.route(path, headers) or ROUTER.route(strip_prefix(path), headers)


def provider_for(path: str, headers: Mapping[str, str]) -> Provider:
    """The API surface that owns a request to the gateway (OpenAI's when no mount
    claims it)."""
    route = _route(path, headers)
    return get(route.api if route is not None else PROVIDERS[0].api)


def match_endpoint(endpoint: str) -> str:
    """An endpoint as matching compares it: the operation it stands for (Azure OpenAI's
    deployments and ``api-version``, Bedrock's model paths, Gemini's model and API version
    left out), without what the request's model carries."""
    endpoint = bedrock_paths.match_endpoint(azure.match_endpoint(endpoint))
    return vertex.match_endpoint(gemini_request.match_endpoint(endpoint))


def match_model(endpoint: str, model: str | None) -> str | None:
    """A request's model as matching compares it: a Bedrock model without its inference
    profile's ARN, geography and vendor; any other as it is."""
    if endpoint.startswith(bedrock_paths.MODEL_PREFIX):
        return bedrock_paths.match_model(model)
    return model


# -- by the semantic conventions' names --------------------------------------------------


def semconv_names() -> dict[str, str]:
    """``gen_ai.provider.name`` / ``gen_ai.system`` values (lower case) to API surfaces."""
    names = {name: row.api for row in PROVIDERS for name in row.semconv_names}
    for known, host in KNOWN.items():  # OpenAI-compatible hosts speak OpenAI's API
        names.setdefault(known, "openai")
        names.setdefault(host.semconv, "openai")
    return names


_NAMES = semconv_names()


def api_named(value: object, model: object = None) -> str | None:
    """The API surface a ``gen_ai.provider.name`` / ``gen_ai.system`` value names, None
    for a value that names none: Vertex AI's speaks the API of the publisher of
    ``model`` (the request's model)."""
    if not isinstance(value, str):
        return None
    name = value.strip().lower()
    if name in vertex.SEMCONV_NAMES:
        return vertex.api_of(model)
    return _NAMES.get(name)


def semconv_name(api: str, endpoint: str) -> str:
    """``gen_ai.provider.name`` of an exchange: its API surface; for a call to Vertex AI
    ``gcp.vertex_ai``; for a named upstream's endpoint (``/u/NAME/...``) that host's name."""
    prefix = named_prefix(endpoint)
    if prefix:
        return named.semconv_name(prefix[len(NAMED_PREFIX) :])
    return vertex.SEMCONV_NAME if vertex.is_vertex(endpoint) else api


def surface_name(provider_name: str, endpoint: str) -> str:
    """The API surface of a span's ``gen_ai.provider.name`` and endpoint (the inverse of
    :func:`semconv_name`)."""
    if provider_name in _SURFACES:
        return provider_name
    if named_prefix(endpoint):
        return named_upstream(named_prefix(endpoint)[len(NAMED_PREFIX) :]).api
    if provider_name.lower() in vertex.SEMCONV_NAMES:
        return vertex.api_at(endpoint)
    return _NAMES.get(provider_name.lower(), provider_name)
