"""Azure OpenAI's paths, mapped onto the OpenAI surface.

Azure serves the OpenAI API under ``/openai/``: the SDK's deployment form
``/openai/deployments/{deployment}/chat/completions?api-version=...`` (the deployment is
the request's model), the unversioned ``/openai/v1/...`` form (the plain OpenAI surface),
and ``/openai/{path}`` for the operations that take no deployment. The canonical endpoint
keeps the Azure path and its ``api-version``; matching compares the OpenAI operation it
stands for, without the ``api-version``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlencode

from otel_replay.providers.parts import strip_prefix

__all__ = [
    "AZURE_PREFIX",
    "azure_endpoint",
    "canonical_endpoint",
    "is_azure",
    "match_endpoint",
    "route",
]

AZURE_PREFIX = "/openai/"
API_VERSION = "api-version"
_DEPLOYMENT = re.compile(r"/openai/deployments/([^/?]+)(/[^?]*)?")


def is_azure(path: str) -> bool:
    """Whether a gateway path is Azure OpenAI's (``/openai/...``)."""
    return path.startswith(AZURE_PREFIX)


def azure_endpoint(path: str, query: Mapping[str, str]) -> str:
    """The canonical endpoint of an Azure OpenAI request: the path from ``/openai`` on
    (``/v1/...`` for the ``/openai/v1`` form, the plain OpenAI surface) plus the
    ``api-version`` it was sent with, which is recorded but never matched (see
    :func:`match_endpoint`). Any other path is returned as given."""
    if not is_azure(path):
        return path
    base = path.rstrip("/")
    if base.startswith("/openai/v1/") or base == "/openai/v1":
        base = base[len("/openai") :]
    version = query.get(API_VERSION)
    return f"{base}?{urlencode({API_VERSION: version})}" if version else base


def canonical_endpoint(path: str) -> str:
    """The canonical endpoint for a path as received or as recorded (idempotent)."""
    if not is_azure(path):
        return strip_prefix(path)
    base, _, query = path.partition("?")
    return azure_endpoint(base, dict(parse_qsl(query, keep_blank_values=True)))


def route(endpoint: str) -> tuple[str, str | None]:
    """The OpenAI path (``/v1/...``, no query) an endpoint stands for, and the Azure
    deployment it names."""
    base = endpoint.partition("?")[0]
    if not is_azure(base):
        return strip_prefix(base), None
    found = _DEPLOYMENT.fullmatch(base)
    if found is not None:
        return "/v1" + (found.group(2) or "").rstrip("/"), found.group(1)
    rest = base[len("/openai") :].rstrip("/")
    return (rest if rest == "/v1" or rest.startswith("/v1/") else "/v1" + rest), None


def match_endpoint(endpoint: str) -> str:
    """An endpoint as matching compares it. An Azure OpenAI endpoint stands for the OpenAI
    operation it serves (``/openai/deployments/{d}/chat/completions`` for
    ``/v1/chat/completions``; the request's model carries the deployment, so a changed
    deployment is a changed model), and Azure's ``api-version`` is left out (a replay
    under a newer API version still hits). So a cassette built from a production trace,
    which records the operation and the model, replays for ``AzureOpenAI`` too."""
    if "?" not in endpoint and not is_azure(endpoint):
        return endpoint
    base, _, query = endpoint.partition("?")
    if is_azure(base):
        base = route(base)[0]
    kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != API_VERSION]
    return f"{base}?{urlencode(kept)}" if kept else base
