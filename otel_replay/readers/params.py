"""The readers' rule for request parameters: by the provider's API.

A trace records more around a model call than the request the provider received: a
framework writes its own client settings beside the request's (OpenInference's
``llm.invocation_parameters`` holds a context-window size, "is chat model" and
"function calling" flags, a system-role name, ``num_output: -1``; litellm's a base URL),
and leaves unset ones as nulls. Only what reached the provider can be compared with a
live request, so a parameter read from a trace counts (lands in the canonical request's
``params``) only when the provider's API takes it for that operation — the body fields
its official SDK's request type declares (``Provider.parameters``); a semantic-convention
parameter the API takes under another of its names (``max_tokens`` for the Responses
API's ``max_output_tokens``) counts under that name. A null is not a value: it is left
out. Everything else is kept in the interaction as ``context``, never compared; so is a
field the request's other components are read from (the model, the messages, the tools)
and a transport field (``stream``), which are not parameters.
"""

from __future__ import annotations

from collections.abc import Mapping

from otel_replay import providers
from otel_replay.core import genai
from otel_replay.core.exchange import JSON

__all__ = ["NOT_PARAMETERS", "by_api"]

NOT_PARAMETERS = frozenset(
    {
        "model",
        "modelId",
        "messages",
        "system",
        "systemInstruction",
        "instructions",
        "input",
        "prompt",
        "contents",
        "content",
        "requests",
        "tools",
        "functions",
        "stream",
        "stream_options",
    }
)
"""Body fields that are not parameters: the request's other components are read from
them, or they choose the transport (every surface's spellings)."""


def by_api(
    provider: str, operation: str, recorded: Mapping[str, JSON]
) -> tuple[dict[str, JSON], dict[str, JSON]]:
    """``recorded`` split into the request parameters the provider's API takes for
    ``operation`` and the context kept beside them; nulls are in neither."""
    accepted = providers.get(provider).parameters(operation) - NOT_PARAMETERS
    params: dict[str, JSON] = {}
    context: dict[str, JSON] = {}
    for name, value in recorded.items():
        if value is None:
            continue
        named = _api_name(name, accepted)
        if named is None or (named != name and (named in recorded or named in params)):
            context[name] = value  # not the API's, or an alias beside another name of it
        else:
            params[named] = value
    return params, context


def _api_name(name: str, accepted: frozenset[str]) -> str | None:
    """The name the API takes a parameter under: its own, else the first of its
    semantic-convention aliases the API takes."""
    if name in accepted:
        return name
    param = genai.PARAM_OF_NAME.get(name)
    aliases = () if param is None else param.names
    return next((alias for alias in aliases if alias in accepted), None)
