"""The table that declares every upstream otel-replay speaks to: one row a provider.

A row (a :class:`~otel_replay.providers.spec.ProviderSpec`) declares once the gateway
paths that reach the upstream, the environment its SDK reads, its credentials, the
response headers kept, its stream codec, its semantic-convention names, its SDK's modules
and its public hosts. An upstream serving another provider's API (Azure OpenAI serves
OpenAI's) is a row with that ``api``. Besides the rows: the hosts and key shapes of
providers without a row yet, and the lookups by name (``spec``, ``upstream_spec``) and
over every row (``egress_hosts``, ``sdk_modules``).
"""

from __future__ import annotations

from collections.abc import Mapping

from otel_replay.core import envvars as ev
from otel_replay.providers import bedrock_paths, gemini_request, vertex
from otel_replay.providers.azure import AZURE_PREFIX, azure_endpoint
from otel_replay.providers.named import KNOWN, named_upstream
from otel_replay.providers.spec import AWS_SIGV4, BEARER, CredentialHeader, Mount, ProviderSpec
from otel_replay.streams.eventstream import EVENTSTREAM

__all__ = [
    "PROVIDERS",
    "UNDECLARED_HOSTS",
    "UNDECLARED_KEYS",
    "egress_hosts",
    "sdk_modules",
    "spec",
    "upstream_spec",
]

_BEARER = CredentialHeader("authorization", BEARER)
_OPENAI_PATHS = ("/v1/chat/", "/v1/completions", "/v1/responses", "/v1/embeddings")
_OPENAI_KEPT = frozenset(
    {
        "content-type",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "x-request-id",
        "openai-processing-ms",
    }
)

_VERTEX_HOSTS = (
    "aiplatform.googleapis.com",
    "*-aiplatform.googleapis.com",
    "aiplatform.*.rep.googleapis.com",
)

PROVIDERS: tuple[ProviderSpec, ...] = (
    ProviderSpec(
        name="openai",
        api="openai",
        title="OpenAI",
        # both SDKs use /v1: OpenAI's own paths are OpenAI's, and so is what is left
        mounts=(Mount("/v1/", paths=_OPENAI_PATHS),),
        base_env=ev.OPENAI_BASE_URL,
        also_base_env=(ev.OPENAI_API_BASE,),
        surface="otel_replay.providers.openai:OPENAI",
        agent_path="/v1",
        default_base="https://api.openai.com/v1",
        base_suffixes=("/v1",),
        option_help="real OpenAI base URL",
        credential_env=(ev.OPENAI_API_KEY,),
        credential_headers=(_BEARER,),
        placeholder_env=(ev.OPENAI_API_KEY,),
        key_kinds=("openai-key",),
        kept_headers=_OPENAI_KEPT,
        kept_prefixes=("x-ratelimit-",),
        semconv_names=("openai",),
        sdk_modules=("openai",),
        egress_hosts=("api.openai.com",),
    ),
    ProviderSpec(
        name="anthropic",
        api="anthropic",
        title="Anthropic",
        # /v1/messages* is always Anthropic's; its headers decide the paths both APIs have.
        # The AI SDK's provider posts to ${ANTHROPIC_BASE_URL}/messages (its default base
        # carries /v1): the Messages API too, forwarded and recorded under /v1
        mounts=(
            Mount(
                "/v1/",
                paths=("/v1/messages",),
                headers=("anthropic-version", "x-api-key"),
                rest=False,
            ),
            Mount("/messages", under="/v1"),
        ),
        base_env=ev.ANTHROPIC_BASE_URL,
        also_base_env=(ev.ANTHROPIC_API_BASE,),
        surface="otel_replay.providers.anthropic:ANTHROPIC",
        default_base="https://api.anthropic.com",
        option_help="real Anthropic base URL",
        credential_env=(ev.ANTHROPIC_API_KEY,),
        credential_headers=(CredentialHeader("x-api-key"), _BEARER),
        placeholder_env=(ev.ANTHROPIC_API_KEY,),
        key_kinds=("anthropic-key",),
        kept_headers=frozenset({"content-type", "retry-after", "x-should-retry", "request-id"}),
        kept_prefixes=("anthropic-ratelimit-",),
        semconv_names=("anthropic",),
        sdk_modules=("anthropic",),
        egress_hosts=("api.anthropic.com",),
    ),
    ProviderSpec(
        name="azure",
        api="openai",
        title="Azure OpenAI",
        # the resource endpoint is per customer: no public default
        mounts=(Mount(AZURE_PREFIX, reads=azure_endpoint),),
        base_env=ev.AZURE_OPENAI_ENDPOINT,
        also_base_env=(ev.AZURE_API_BASE,),
        base_example="https://RESOURCE.openai.azure.com",
        base_suffixes=("/openai/v1", "/openai"),
        option_help="real Azure OpenAI resource endpoint (default: the caller's "
        f"{ev.AZURE_OPENAI_ENDPOINT})",
        credential_env=(ev.AZURE_OPENAI_API_KEY, ev.AZURE_OPENAI_AD_TOKEN),
        credential_headers=(CredentialHeader("api-key"), _BEARER),
        placeholder_env=(ev.AZURE_OPENAI_API_KEY,),
        kept_headers=_OPENAI_KEPT,
        kept_prefixes=("x-ratelimit-",),
        semconv_names=("azure.ai.openai", "az.ai.openai", "azure"),
        egress_hosts=(
            "*.openai.azure.com",
            "*.cognitiveservices.azure.com",
            "*.services.ai.azure.com",
        ),
    ),
    ProviderSpec(
        name="gemini",
        api="gcp.gemini",
        title="Gemini API",
        # /v1beta/ and /v1alpha/ are Gemini's alone; under /v1/ only its model methods
        mounts=(
            Mount("/v1beta/"),
            Mount("/v1alpha/"),
            Mount("/v1/", pattern=gemini_request.GEMINI_PATH, rest=False),
        ),
        base_env=ev.GOOGLE_GEMINI_BASE_URL,
        also_base_env=(ev.GEMINI_API_BASE,),
        surface="otel_replay.providers.gemini:GEMINI",
        default_base="https://generativelanguage.googleapis.com",
        option_help="real Gemini API base URL",
        credential_env=(ev.GOOGLE_API_KEY, ev.GEMINI_API_KEY),
        credential_headers=(CredentialHeader("x-goog-api-key"),),
        placeholder_env=(ev.GEMINI_API_KEY,),
        key_kinds=("google-api-key",),
        kept_headers=frozenset({"content-type", "retry-after", "x-should-retry"}),
        semconv_names=("gcp.gemini", "gemini", "gcp.gen_ai"),
        sdk_modules=("google.genai",),
        egress_hosts=("generativelanguage.googleapis.com",),
    ),
    ProviderSpec(
        name="vertex",
        api="gcp.gemini",
        title="Vertex AI (Gemini)",
        # google-genai with vertexai=True: /v1beta1/ is Vertex AI's alone
        mounts=(
            Mount("/v1beta1/", pattern=vertex.GOOGLE_PATH, reads=vertex.vertex_endpoint),
            Mount("/v1/", pattern=vertex.GOOGLE_PATH, rest=False, reads=vertex.vertex_endpoint),
        ),
        base_env=ev.GOOGLE_VERTEX_BASE_URL,
        default_base=vertex.PUBLIC_BASE,
        regional=vertex.regional_base,
        option_help="real Vertex AI endpoint for Gemini (default: the caller's "
        f"{ev.GOOGLE_VERTEX_BASE_URL}, else the location's public one)",
        credential_env=(ev.GOOGLE_APPLICATION_CREDENTIALS,),
        credential_headers=(_BEARER, CredentialHeader("x-goog-api-key")),
        minted_credentials=True,
        kept_headers=frozenset({"content-type", "retry-after", "x-should-retry"}),
        egress_hosts=_VERTEX_HOSTS,
    ),
    ProviderSpec(
        name="vertex-anthropic",
        api="anthropic",
        title="Vertex AI (Claude)",
        # AnthropicVertex, Claude Code on Vertex: publishers/anthropic under /v1/
        mounts=(
            Mount("/v1/", pattern=vertex.ANTHROPIC_PATH, rest=False, reads=vertex.vertex_endpoint),
        ),
        base_env=ev.ANTHROPIC_VERTEX_BASE_URL,
        agent_path="/v1",
        default_base=vertex.PUBLIC_BASE,
        base_suffixes=("/v1",),
        regional=vertex.regional_base,
        option_help="real Vertex AI endpoint for Claude (default: the caller's "
        f"{ev.ANTHROPIC_VERTEX_BASE_URL}, else the region's public one)",
        credential_env=(ev.GOOGLE_APPLICATION_CREDENTIALS,),
        credential_headers=(_BEARER,),
        minted_credentials=True,
        agent_defaults=vertex.anthropic_defaults,
        kept_headers=frozenset({"content-type", "retry-after", "x-should-retry", "request-id"}),
        egress_hosts=_VERTEX_HOSTS,
    ),
    ProviderSpec(
        name="bedrock",
        api="aws.bedrock",
        title="AWS Bedrock Runtime",
        mounts=(Mount(bedrock_paths.MODEL_PREFIX),),
        base_env=ev.AWS_ENDPOINT_URL_BEDROCK_RUNTIME,
        also_base_env=(ev.ANTHROPIC_BEDROCK_BASE_URL, ev.AWS_BEDROCK_RUNTIME_ENDPOINT),
        agent_defaults=bedrock_paths.claude_code_defaults,
        surface="otel_replay.providers.bedrock:BEDROCK",
        default_base="https://bedrock-runtime.{region}.amazonaws.com",
        option_help="real Bedrock Runtime endpoint (default: the caller's "
        f"{ev.AWS_ENDPOINT_URL_BEDROCK_RUNTIME}, else the region's public one)",
        credential_env=(ev.AWS_ACCESS_KEY_ID,),
        # SigV4: the access key id in Authorization, and the session token
        credential_headers=(
            CredentialHeader("authorization", AWS_SIGV4),
            CredentialHeader("x-amz-security-token"),
        ),
        placeholder_env=(ev.AWS_ACCESS_KEY_ID, ev.AWS_SECRET_ACCESS_KEY),
        key_kinds=("aws-access-key-id",),
        region_env=(ev.AWS_DEFAULT_REGION, ev.AWS_REGION),  # botocore reads the first
        kept_headers=frozenset(
            {"content-type", "retry-after", "x-amzn-requestid", "x-amzn-errortype"}
        ),
        kept_prefixes=("x-amzn-bedrock-",),
        codec=EVENTSTREAM,
        semconv_names=("aws.bedrock", "aws_bedrock", "bedrock", "aws"),
        sdk_modules=("boto3", "botocore"),
        egress_hosts=("bedrock-runtime.*.amazonaws.com", "bedrock-runtime-fips.*.amazonaws.com"),
        signing_name="bedrock",
    ),
)
"""Every upstream otel-replay speaks to, in the order the agent's environment lists them."""

UNDECLARED_HOSTS: tuple[str, ...] = (
    "api.together.ai",
    "api.cohere.com",
    "api.cohere.ai",
)
"""Host patterns (``fnmatch``) of model provider APIs that have no row of their own yet:
guarded all the same. A provider given a row takes its hosts into ``egress_hosts``."""

UNDECLARED_KEYS: Mapping[str, str] = {}
"""Key shapes (as ``redaction.shapes`` names them) of providers without a row yet, and
whose they are: a request carrying one is forwarded to no upstream until a row declares
the shape in its ``key_kinds``."""

_SPECS = {row.name: row for row in PROVIDERS}


def spec(name: str) -> ProviderSpec | None:
    """The declaration of the upstream called ``name``, if there is one."""
    return _SPECS.get(name)


def upstream_spec(name: str) -> ProviderSpec | None:
    """The declaration of ``name``: a row of ``PROVIDERS``, else the named OpenAI-compatible
    upstream (``--upstream NAME=URL``); None for a name that cannot be one."""
    row = _SPECS.get(name)
    if row is not None:
        return row
    try:
        return named_upstream(name)
    except ValueError:
        return None


def egress_hosts() -> tuple[str, ...]:
    """Every model provider host pattern: each row's, the named OpenAI-compatible hosts',
    then the undeclared ones."""
    rows = (host for row in PROVIDERS for host in row.egress_hosts)
    named_hosts = (host for known in KNOWN.values() for host in known.egress)
    return tuple(dict.fromkeys([*rows, *named_hosts, *UNDECLARED_HOSTS]))


def sdk_modules() -> frozenset[str]:
    """Top-level modules of the official SDKs of every provider."""
    return frozenset(module for row in PROVIDERS for module in row.sdk_modules)
