"""Vertex AI's paths: Gemini (``google-genai`` with ``vertexai=True``) and Claude
(``AnthropicVertex``, Claude Code's ``CLAUDE_CODE_USE_VERTEX``) on Google Cloud.

Vertex AI names the project and the location in the path, then the publisher's model and
a method: ``/v1beta1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent``
(express mode, keyed by an API key, leaves out the project and location) and
``/v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:rawPredict`` (or
``:streamRawPredict``), whose body is Anthropic's Messages API less its ``model``.

The project and the location are the caller's account, not the question: the endpoint a
recording keeps (:func:`vertex_endpoint`) leaves them out, so a replay under another
project or in another region hits. The host a live call goes to follows the location
(:func:`regional_base`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from otel_replay.core import envvars as ev

__all__ = [
    "ANTHROPIC_PATH",
    "GOOGLE_PATH",
    "PLACEHOLDER_PROJECT",
    "PUBLIC_BASE",
    "SEMCONV_NAME",
    "SEMCONV_NAMES",
    "TOKEN_PATH",
    "anthropic_defaults",
    "anthropic_model",
    "anthropic_operation",
    "api_at",
    "api_of",
    "is_vertex",
    "match_endpoint",
    "placeholder_credentials",
    "regional_base",
    "token_answer",
    "unaddressed",
    "vertex_endpoint",
]

_PLACE = r"(?:projects/[^/]+/locations/([^/]+)/)"
GOOGLE_PATH = re.compile(rf"/(?:v1|v1beta1)/{_PLACE}?publishers/google/models/[^/:?]+:[A-Za-z]+")
"""A Gemini model method on Vertex AI (with a project and location, or express mode's)."""
ANTHROPIC_PATH = re.compile(
    rf"/v1/{_PLACE}publishers/anthropic/models/([^/:?]+):(rawPredict|streamRawPredict)"
)
"""A Claude model method on Vertex AI: location, model, method."""

GEMINI_API = "gcp.gemini"
"""The API surface Gemini on Vertex AI speaks."""
PUBLIC_BASE = "https://aiplatform.googleapis.com"
"""Vertex AI's global endpoint; a regional location has a host of its own."""
_MULTI_REGIONS = frozenset({"us", "eu"})
_COUNT_TOKENS = "count-tokens"  # the model segment of Claude's token counting
_ANTHROPIC = "/publishers/anthropic/"


def vertex_endpoint(path: str, query: Mapping[str, str]) -> str:
    """The endpoint a recording keeps for a Vertex AI path: without the project and the
    location (``/v1beta1/publishers/google/models/{m}:generateContent``) and without the
    query (``alt=sse``, which the method already says)."""
    base = path.partition("?")[0].rstrip("/")
    return re.sub(rf"^(/v1(?:beta1)?/){_PLACE}", r"\1", base)


def regional_base(path: str) -> str:
    """The public Vertex AI endpoint serving the location a path names (the global one
    when it names none)."""
    found = re.search(rf"/{_PLACE}", path)
    location = found.group(1) if found is not None else "global"
    if location == "global":
        return PUBLIC_BASE
    if location in _MULTI_REGIONS:
        return f"https://aiplatform.{location}.rep.googleapis.com"
    return f"https://{location}-aiplatform.googleapis.com"


def _anthropic_match(endpoint: str) -> re.Match[str] | None:
    """Claude's method on Vertex AI in an endpoint as received or as recorded."""
    base = endpoint.partition("?")[0]
    found = ANTHROPIC_PATH.fullmatch(base)
    if found is None:  # as recorded: the project and location left out
        place = "/v1/projects/-/locations/-/"
        found = ANTHROPIC_PATH.fullmatch(place + base.removeprefix("/v1/"))
    return found


def anthropic_model(endpoint: str) -> str | None:
    """The model a Claude call on Vertex AI names in its path (not token counting)."""
    found = _anthropic_match(endpoint)
    if found is None or found.group(2) == _COUNT_TOKENS:
        return None
    return found.group(2)


def anthropic_operation(endpoint: str) -> str | None:
    """The Anthropic operation of a Claude call on Vertex AI (``messages``,
    ``count_tokens``), or None for an endpoint that is not one."""
    if _ANTHROPIC not in endpoint:
        return None
    found = _anthropic_match(endpoint)
    if found is None:
        return None
    return "count_tokens" if found.group(2) == _COUNT_TOKENS else "messages"


def match_endpoint(endpoint: str) -> str:
    """An endpoint as matching compares it: a Claude call on Vertex AI is the Messages
    API call it carries (the model is compared as the model; streamed or not is the same
    question), so it replays a recording of the same call to Anthropic's own API."""
    operation = anthropic_operation(endpoint)
    if operation is None:
        return endpoint
    return "/v1/messages/count_tokens" if operation == "count_tokens" else "/v1/messages"


def unaddressed(method: str, path: str, headers: Mapping[str, str]) -> str | None:
    """Why a request (lower-case header names) is a google-genai call sent to the bare
    base URL, or None. Given a base URL, google-genai on Vertex AI names the model and
    the method in the path only when its client is given the project and the location
    (or an API key) in code; from the environment alone it posts every call to the base
    URL itself, which no proxy can tell apart."""
    if method != "POST" or path.strip("/") or "genai" not in headers.get("x-goog-api-client", ""):
        return None
    return (
        f"google-genai sent a Vertex AI call to the bare base URL ({ev.GOOGLE_VERTEX_BASE_URL}), "
        "without its model or method: with a base URL set, the client puts them in the path "
        "only when genai.Client(vertexai=True, project=..., location=...) is given both in "
        "code (or api_key=...), not from GOOGLE_CLOUD_PROJECT / GOOGLE_CLOUD_LOCATION alone"
    )


SEMCONV_NAME = "gcp.vertex_ai"
"""``gen_ai.provider.name`` of a call to Vertex AI (a recorded call's span says it)."""
SEMCONV_NAMES = frozenset({SEMCONV_NAME, "vertex_ai", "vertexai"})
"""``gen_ai.provider.name`` / ``gen_ai.system`` values of a call to Vertex AI, whichever
publisher's model it asked (the Google GenAI instrumentation, the Anthropic SDK's)."""
_RECORDED = re.compile(r"/v1(?:beta1)?/publishers/(?:google|anthropic)/models/[^/:?]+:")


def is_vertex(endpoint: str) -> bool:
    """Whether an endpoint (as received or as recorded) is a model method on Vertex AI."""
    if "/publishers/" not in endpoint:  # every other call's span: no regex on its way
        return False
    return _RECORDED.match(vertex_endpoint(endpoint, {})) is not None


def api_at(endpoint: str) -> str:
    """The API surface a Vertex AI endpoint speaks: Anthropic's for Claude's methods, else
    Gemini's."""
    return "anthropic" if anthropic_operation(endpoint) is not None else GEMINI_API


def api_of(model: object) -> str:
    """The API surface a Vertex AI call to ``model`` speaks: Anthropic's for a Claude
    model, else Gemini's."""
    return "anthropic" if isinstance(model, str) and "claude" in model.lower() else GEMINI_API


# -- the agent's account and credentials in replay ---------------------------------------

PLACEHOLDER_PROJECT = "otel-replay-project"
"""The project given in strict replay to an agent that names none (never a real one)."""
TOKEN_PATH = "/_otel_replay/google/token"
"""Where the gateway answers the token exchange of :func:`placeholder_credentials`."""
_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"


def anthropic_defaults(caller: Mapping[str, str], mode: str) -> dict[str, str]:
    """What Claude on Vertex AI (``AnthropicVertex``, Claude Code) needs in strict replay
    besides its base URL: a project and a region where the caller names none, and Claude
    Code told not to fetch Google credentials (nothing it sends goes live)."""
    if mode != "strict":
        return {}
    env = {ev.CLAUDE_CODE_SKIP_VERTEX_AUTH: "1"}
    if not caller.get(ev.ANTHROPIC_VERTEX_PROJECT_ID):
        env[ev.ANTHROPIC_VERTEX_PROJECT_ID] = PLACEHOLDER_PROJECT
    if not caller.get(ev.CLOUD_ML_REGION):
        env[ev.CLOUD_ML_REGION] = "global"
    return env


def placeholder_credentials(gateway: str, path: str) -> dict[str, object]:
    """Application Default Credentials, written at ``path``, that Google's auth library
    turns into a token without leaving the machine: a workload identity federation
    whose token exchange is the gateway's (:data:`TOKEN_PATH`), whose subject token is
    this file's own text. The token names no one; the gateway never sends it on."""
    return {
        "type": "external_account",
        "audience": "//iam.googleapis.com/locations/global/workloadIdentityPools/"
        "otel-replay/providers/otel-replay",
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": gateway + TOKEN_PATH,
        "credential_source": {"file": path},
    }


def token_answer() -> dict[str, object]:
    """The gateway's answer to the token exchange: the placeholder key as the token."""
    return {
        "access_token": ev.PLACEHOLDER_KEY,
        "issued_token_type": _TOKEN_TYPE,
        "token_type": "Bearer",
        "expires_in": 3600,
    }
