"""Every environment variable name otel-replay reads or sets, in one place (and the
placeholder key it sets)."""

from __future__ import annotations

# Provider SDKs: where the agent sends its model calls.
OPENAI_BASE_URL = "OPENAI_BASE_URL"
ANTHROPIC_BASE_URL = "ANTHROPIC_BASE_URL"
OPENAI_API_KEY = "OPENAI_API_KEY"
ANTHROPIC_API_KEY = "ANTHROPIC_API_KEY"
# Azure OpenAI (``openai.AzureOpenAI``): the resource endpoint (the SDK appends ``/openai``)
# and its key; the caller's endpoint is the Azure upstream.
AZURE_OPENAI_ENDPOINT = "AZURE_OPENAI_ENDPOINT"
AZURE_OPENAI_API_KEY = "AZURE_OPENAI_API_KEY"
AZURE_OPENAI_AD_TOKEN = "AZURE_OPENAI_AD_TOKEN"
# Gemini API (``google-genai``): the base URL its client reads, and its two key variables
# (``GOOGLE_API_KEY`` wins when both are set).
GOOGLE_GEMINI_BASE_URL = "GOOGLE_GEMINI_BASE_URL"
GOOGLE_API_KEY = "GOOGLE_API_KEY"
GEMINI_API_KEY = "GEMINI_API_KEY"
# Vertex AI: google-genai's base URL and account (``vertexai=True``), the Anthropic SDK's
# (``AnthropicVertex``, also read by Claude Code with ``CLAUDE_CODE_USE_VERTEX``), and
# Google's Application Default Credentials.
GOOGLE_VERTEX_BASE_URL = "GOOGLE_VERTEX_BASE_URL"
GOOGLE_CLOUD_PROJECT = "GOOGLE_CLOUD_PROJECT"
GOOGLE_CLOUD_LOCATION = "GOOGLE_CLOUD_LOCATION"
GOOGLE_APPLICATION_CREDENTIALS = "GOOGLE_APPLICATION_CREDENTIALS"
CLOUDSDK_CONFIG = "CLOUDSDK_CONFIG"
ANTHROPIC_VERTEX_BASE_URL = "ANTHROPIC_VERTEX_BASE_URL"
ANTHROPIC_VERTEX_PROJECT_ID = "ANTHROPIC_VERTEX_PROJECT_ID"
CLOUD_ML_REGION = "CLOUD_ML_REGION"
CLAUDE_CODE_SKIP_VERTEX_AUTH = "CLAUDE_CODE_SKIP_VERTEX_AUTH"
# AWS Bedrock Runtime (boto3): botocore's service-specific endpoint override, the caller's
# credentials (the gateway re-signs live calls with them) and region.
AWS_ENDPOINT_URL_BEDROCK_RUNTIME = "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"
AWS_ACCESS_KEY_ID = "AWS_ACCESS_KEY_ID"
AWS_SECRET_ACCESS_KEY = "AWS_SECRET_ACCESS_KEY"
AWS_SESSION_TOKEN = "AWS_SESSION_TOKEN"
AWS_REGION = "AWS_REGION"
AWS_DEFAULT_REGION = "AWS_DEFAULT_REGION"
# Claude Code on Bedrock (``CLAUDE_CODE_USE_BEDROCK``): its base URL, and its setting for a
# gateway that signs the calls itself.
ANTHROPIC_BEDROCK_BASE_URL = "ANTHROPIC_BEDROCK_BASE_URL"
CLAUDE_CODE_SKIP_BEDROCK_AUTH = "CLAUDE_CODE_SKIP_BEDROCK_AUTH"
# Older names frameworks still read for the same base URLs (found in their sources):
# langchain-openai and litellm read ``OPENAI_API_BASE`` (litellm after ``OPENAI_BASE_URL``,
# langchain-openai before it); litellm reads ``ANTHROPIC_API_BASE``, ``GEMINI_API_BASE``,
# ``AZURE_API_BASE`` and ``AWS_BEDROCK_RUNTIME_ENDPOINT``.
OPENAI_API_BASE = "OPENAI_API_BASE"
ANTHROPIC_API_BASE = "ANTHROPIC_API_BASE"
GEMINI_API_BASE = "GEMINI_API_BASE"
AZURE_API_BASE = "AZURE_API_BASE"
AWS_BEDROCK_RUNTIME_ENDPOINT = "AWS_BEDROCK_RUNTIME_ENDPOINT"
# The key given to an agent that has none during replay (the SDKs refuse to start
# without one); never a credential.
PLACEHOLDER_KEY = "otel-replay-no-key"

# OpenTelemetry exporters: where the agent sends its own telemetry.
OTLP_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
OTLP_TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
OTLP_LOGS_ENDPOINT = "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"
OTLP_METRICS_ENDPOINT = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
OTLP_PROTOCOL = "OTEL_EXPORTER_OTLP_PROTOCOL"
OTLP_TRACES_PROTOCOL = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
OTLP_LOGS_PROTOCOL = "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"
OTLP_METRICS_PROTOCOL = "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"
OTLP_INSECURE = "OTEL_EXPORTER_OTLP_INSECURE"
OTLP_TRACES_INSECURE = "OTEL_EXPORTER_OTLP_TRACES_INSECURE"
OTLP_LOGS_INSECURE = "OTEL_EXPORTER_OTLP_LOGS_INSECURE"
OTLP_METRICS_INSECURE = "OTEL_EXPORTER_OTLP_METRICS_INSECURE"

# Set by otel-replay for the agent, so it (or its tests) can tell it runs under the gateway.
OTEL_REPLAY_URL = "OTEL_REPLAY_URL"
OTEL_REPLAY_GRPC_PORT = "OTEL_REPLAY_GRPC_PORT"
OTEL_REPLAY_MODE = "OTEL_REPLAY_MODE"
# the agent's own tools (``--tools``): ``replay`` (recorded, then replayed) or ``live``
OTEL_REPLAY_TOOLS = "OTEL_REPLAY_TOOLS"
# OTEL_REPLAY_MCP_<NAME>_URL: where the gateway serves MCP server NAME (``--mcp NAME=URL``).
OTEL_REPLAY_MCP_PREFIX = "OTEL_REPLAY_MCP_"

# Read by otel-replay.
CI = "CI"
OTEL_REPLAY_UPDATE_SNAPSHOTS = "OTEL_REPLAY_UPDATE_SNAPSHOTS"  # rewrite trace snapshots
# ``1``: a test an auto-mode miss leaves *not evaluated* (no provider key) fails instead
OTEL_REPLAY_STRICT = "OTEL_REPLAY_STRICT"
# ``1``: as ``--tls`` (an agent's clients trust the gateway's TLS on its port: wss:// clients)
OTEL_REPLAY_TLS = "OTEL_REPLAY_TLS"
# a key for the placeholders: ``[REDACTED:kind:8 hex digits of HMAC-SHA256(key, secret)]``
OTEL_REPLAY_HMAC_KEY = "OTEL_REPLAY_HMAC_KEY"
# ``serve``: the token of its control route (``gateway.control``), read and removed at start.
OTEL_REPLAY_CONTROL = "OTEL_REPLAY_CONTROL"
# ``build --from``: extra request headers (``k=v,k2=v2``), and the backends' own credentials
OTEL_REPLAY_FROM_HEADERS = "OTEL_REPLAY_FROM_HEADERS"
PHOENIX_API_KEY = "PHOENIX_API_KEY"
CLICKHOUSE_USER = "CLICKHOUSE_USER"
CLICKHOUSE_PASSWORD = "CLICKHOUSE_PASSWORD"
LANGFUSE_PUBLIC_KEY = "LANGFUSE_PUBLIC_KEY"
LANGFUSE_SECRET_KEY = "LANGFUSE_SECRET_KEY"
MLFLOW_TRACKING_TOKEN = "MLFLOW_TRACKING_TOKEN"
MLFLOW_TRACKING_USERNAME = "MLFLOW_TRACKING_USERNAME"
MLFLOW_TRACKING_PASSWORD = "MLFLOW_TRACKING_PASSWORD"

SECRET_NAME_SUFFIXES = (
    "_KEY",
    "_APIKEY",
    "_TOKEN",
    "_PAT",
    "_SECRET",
    "_PASSWORD",
    "_PASSWD",
    "_PASS",
    "_CREDENTIAL",
    "_CREDENTIALS",
)
"""A variable whose name ends so (after any ``_2``-style number) holds a secret."""
SECRET_NAME_WORDS = ("SECRET", "PASSWORD")
"""A variable whose name holds one of these anywhere (``SECRET_KEY_BASE``) holds a secret."""
SECRET_WORDS = frozenset(
    {"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS"}
)
"""A name holding one of these as a word anywhere (words split at ``_``, ``-``, ``.`` and
camelCase: ``API_TOKEN_FILE_CONTENT``, ``clientSecret``) names a secret; ``KEYBOARD``,
``MAX_TOKENS`` hold none as a word."""
DESCRIBING_WORDS = frozenset(
    {
        "COUNT",
        "COUNTS",
        "LIMIT",
        "LIMITS",
        "USAGE",
        "USED",
        "SIZE",
        "LENGTH",
        "LEN",
        "TYPE",
        "KIND",
        "NAME",
        "NAMES",
        "ID",
        "IDS",
        "INDEX",
        "PATH",
        "DIR",
        "URL",
        "URI",
        "ENDPOINT",
        "HEADER",
        "FIELD",
        "PREFIX",
        "BUDGET",
        "RATE",
        "TTL",
        "EXPIRY",
        "EXPIRES",
        "EXPIRATION",
        "HINT",
    }
)
"""A word after a secret word that makes the name describe the secret rather than hold
it: ``TOKEN_COUNT``, ``llm.token_count.prompt``, ``token_type``, ``KEY_ID``."""
IDENTIFIER_KEYS = frozenset(
    {
        "CACHE",
        "IDEMPOTENCY",
        "PARTITION",
        "SORT",
        "PRIMARY",
        "FOREIGN",
        "ROUTING",
        "DEDUPE",
        "DEDUP",
        "LOOKUP",
        "GROUP",
        "SHARD",
        "HASH",
        "PUBLIC",
    }
)
"""A word before ``KEY`` that makes it an identifier, not a credential: OpenAI's
``prompt_cache_key``, ``idempotency_key``, ``partition_key``, ``public_key``."""
