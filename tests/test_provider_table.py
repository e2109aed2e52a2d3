"""The provider table and the router: every upstream declared once, every path routed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from multidict import CIMultiDict

from otel_replay import providers
from otel_replay.core import envvars as ev
from otel_replay.gateway.runner import GatewayConfig, agent_environment, upstream_bases
from otel_replay.gateway.upstream import NoUpstream, provider_url
from otel_replay.providers import PROVIDERS, ROUTER, ProviderSpec, get, provider_for
from otel_replay.providers.router import Router
from otel_replay.providers.spec import AWS_SIGV4, BEARER, CredentialHeader, Mount
from otel_replay.streams.eventstream import EVENTSTREAM
from otel_replay.streams.sse import SSE

# --- routing through the table ----------------------------------------------------------

ROUTES = [
    # path as received, headers, (api, upstream)
    ("/v1/chat/completions", {}, ("openai", "openai")),
    ("/v1/responses", {"x-api-key": "k"}, ("openai", "openai")),
    ("/v1/embeddings", {"anthropic-version": "2023-06-01"}, ("openai", "openai")),
    ("/v1/completions", {}, ("openai", "openai")),
    ("/v1/models", {}, ("openai", "openai")),
    ("/v1/files/abc", {"authorization": "Bearer k"}, ("openai", "openai")),
    ("/v1/messages", {}, ("anthropic", "anthropic")),
    ("/v1/messages/count_tokens", {"authorization": "Bearer k"}, ("anthropic", "anthropic")),
    ("/v1/models", {"anthropic-version": "2023-06-01"}, ("anthropic", "anthropic")),
    ("/v1/models", {"X-Api-Key": "k"}, ("anthropic", "anthropic")),
    ("/messages", {"x-api-key": "k"}, ("anthropic", "anthropic")),
    ("/messages/count_tokens", {}, ("anthropic", "anthropic")),
    ("/openai/deployments/d/chat/completions", {}, ("openai", "azure")),
    ("/openai/v1/responses", {"x-api-key": "k"}, ("openai", "azure")),
    ("/openai/models", {"api-key": "k"}, ("openai", "azure")),
    ("/model/anthropic.claude-3-haiku-v1:0/converse", {}, ("aws.bedrock", "bedrock")),
    ("/model/m/invoke-with-response-stream", {"x-api-key": "k"}, ("aws.bedrock", "bedrock")),
    ("/u/groq/v1/chat/completions", {"x-api-key": "k"}, ("openai", "groq")),
    ("/u/my-vllm/v1/models", {}, ("openai", "my-vllm")),
]


@pytest.mark.parametrize(("path", "headers", "expected"), ROUTES)
def test_every_provider_routes_its_paths(path, headers, expected):
    route = ROUTER.route(path, headers)
    assert route is not None
    assert (route.api, route.upstream) == expected
    assert provider_for(path, headers) is get(expected[0])


@pytest.mark.parametrize(
    "path", ["/", "/health", "/v1", "/v2/chat/completions", "/openai", "/u/groq", "/u/Bad!/v1"]
)
def test_a_path_under_no_mount_is_not_a_provider_path(path):
    assert ROUTER.route(path, {"x-api-key": "k"}) is None


def test_azure_is_a_mount_onto_the_openai_surface():
    route = ROUTER.route("/openai/deployments/gpt/chat/completions", {})
    assert route is not None and route.spec is providers.spec("azure")
    query = {"api-version": "2024-06-01"}
    path = route.provider_path("/openai/deployments/gpt/chat/completions", query)
    assert path == "/openai/deployments/gpt/chat/completions?api-version=2024-06-01"
    plain = ROUTER.route("/v1/chat/completions", {})
    assert plain is not None
    assert plain.provider_path("/v1/chat/completions", query) == "/v1/chat/completions"


def test_the_messages_api_without_its_version_is_read_and_forwarded_under_v1():
    # the AI SDK's Anthropic provider posts to ${ANTHROPIC_BASE_URL}/messages
    route = ROUTER.route("/messages", {"anthropic-version": "2023-06-01"})
    assert route is not None and route.spec is providers.spec("anthropic")
    assert route.forward_path("/messages") == "/v1/messages"
    assert route.provider_path("/messages/count_tokens", {}) == "/v1/messages/count_tokens"
    plain = ROUTER.route("/v1/messages", {})
    assert plain is not None and plain.forward_path("/v1/messages") == "/v1/messages"


def test_recorded_endpoints_behind_a_prefix_still_find_their_surface():
    assert provider_for("/proxy/v1/messages/count_tokens", {}).name == "anthropic"
    assert provider_for("/anything", {}).name == "openai"


def test_every_row_is_complete_and_names_a_surface():
    names = [row.name for row in PROVIDERS]
    assert len(names) == len(set(names)) == len({row.base_env for row in PROVIDERS})
    assert {row.api for row in PROVIDERS if row.surface} == {row.api for row in PROVIDERS}
    for row in PROVIDERS:
        assert get(row.api).name == row.api
        assert row.mounts and row.credential_env and row.credential_headers
        assert row.egress_hosts and row.codec is (EVENTSTREAM if row.signing_name else SSE)
        assert providers.spec(row.name) is row
    assert providers.spec("nobody") is None


# --- the router as a table of mounts -----------------------------------------------------

NAMED = ProviderSpec(
    name="groq",
    api="openai",
    title="Groq",
    mounts=(Mount("/u/groq/", strip="/u/groq"),),
    base_env="GROQ_BASE_URL",
    default_base="https://api.groq.com/openai/v1",
    base_suffixes=("/v1",),
)


def test_a_named_openai_compatible_upstream_is_one_more_row():
    router = Router((*PROVIDERS, NAMED))
    route = router.route("/u/groq/v1/chat/completions", {"x-api-key": "k"})
    assert route is not None and (route.api, route.upstream) == ("openai", "groq")
    assert route.forward_path("/u/groq/v1/chat/completions") == "/v1/chat/completions"
    assert route.provider_path("/u/groq/v1/chat/completions", {}) == "/v1/chat/completions"
    other = router.route("/v1/chat/completions", {})
    assert other is not None and other.upstream == "openai"
    assert NAMED.join("https://api.groq.com/openai/v1/", "/v1/chat/completions") == (
        "https://api.groq.com/openai/v1/chat/completions"
    )


def test_a_path_claim_beats_a_header_claim_which_beats_the_rest():
    rest = ProviderSpec("a", "openai", "A", (Mount("/x/", paths=("/x/a",)),), "A_URL")
    heads = ProviderSpec(
        "b", "anthropic", "B", (Mount("/x/", headers=("b-key",), rest=False),), "B_URL"
    )
    router = Router((rest, heads))

    def upstream(path: str, headers: dict[str, str]) -> str | None:
        route = router.route(path, headers)
        return None if route is None else route.upstream

    assert upstream("/x/a/1", {"b-key": "1"}) == "a"
    assert upstream("/x/other", {"b-key": "1"}) == "b"
    assert upstream("/x/other", {}) == "a"
    assert Router((heads,)).route("/x/other", {}) is None


PATHS = [path for path, _, _ in ROUTES] + ["/", "/v1", "/u/groq", "/openai", "/v1/models/x"]
HEADER_NAMES = ["x-api-key", "X-Api-Key", "anthropic-version", "api-key", "authorization"]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(PATHS), st.sets(st.sampled_from(HEADER_NAMES))),
        min_size=1,
        max_size=12,
    )
)
def test_a_remembered_route_is_the_route_the_table_gives(requests):
    router = Router(PROVIDERS, named=providers.named_upstream)
    for path, names in requests:
        headers = dict.fromkeys(names, "k")
        expected, _ = router._route(path, headers)
        assert router.route(path, headers) == expected
        assert router.route(path, CIMultiDict(headers)) == expected  # names in any case


# --- what the rows drive -----------------------------------------------------------------


def test_joining_a_base_and_a_path_follows_the_declaration():
    path = "/v1/chat/completions"
    assert provider_url("https://api.openai.com/v1/", "openai", path) == (
        "https://api.openai.com/v1/chat/completions"
    )
    assert provider_url("https://api.anthropic.com", "anthropic", "/v1/messages") == (
        "https://api.anthropic.com/v1/messages"
    )
    assert provider_url("https://h/base", "unknown", path) == "https://h/base" + path


def test_an_upstream_without_a_base_says_what_to_set():
    message = str(NoUpstream("azure"))
    assert "set AZURE_OPENAI_ENDPOINT (https://RESOURCE.openai.azure.com)" in message
    assert "--upstream-azure URL" in message
    assert str(NoUpstream("groq")) == ("no groq upstream to forward to: pass --upstream groq=URL")


def test_the_agent_environment_and_the_upstreams_come_from_the_rows():
    env = agent_environment("http://127.0.0.1:9", None, "strict", {})
    for row in PROVIDERS:
        assert env[row.base_env] == "http://127.0.0.1:9" + row.agent_path
        for key in row.placeholder_env:
            assert env[key] == ev.PLACEHOLDER_KEY
    assert env[ev.AWS_DEFAULT_REGION] == "us-east-1"  # strict only, and only when none is set
    assert ev.AWS_DEFAULT_REGION not in agent_environment("http://h:9", None, "auto", {})
    assert ev.AWS_DEFAULT_REGION not in agent_environment(
        "http://h:9", None, "strict", {ev.AWS_REGION: "eu-west-1"}
    )
    bases = upstream_bases(GatewayConfig(mode="record"), {})
    assert bases == {row.name: row.default_base for row in PROVIDERS if row.default_base}
    named = GatewayConfig(mode="record", upstream_openai="http://o", upstreams={"groq": "http://g"})
    assert upstream_bases(named, {ev.ANTHROPIC_BASE_URL: "http://a"}) == {
        "openai": "http://o",
        "anthropic": "http://a",
        "gemini": "https://generativelanguage.googleapis.com",
        "vertex": "https://aiplatform.googleapis.com",  # the location's host when forwarded
        "vertex-anthropic": "https://aiplatform.googleapis.com",
        "bedrock": "https://bedrock-runtime.{region}.amazonaws.com",
        "groq": "http://g",
    }


def test_derived_tables():
    assert providers.semconv_names()["az.ai.openai"] == "openai"
    assert providers.semconv_names()["anthropic"] == "anthropic"
    assert providers.semconv_names()["gcp.gemini"] == "gcp.gemini"
    assert providers.semconv_names()["aws.bedrock"] == "aws.bedrock"
    assert providers.semconv_names()["mistral_ai"] == "openai"
    assert providers.sdk_modules() == frozenset(
        {"openai", "anthropic", "google.genai", "boto3", "botocore"}
    )
    names = [(h.name, h.scheme) for h in providers.credential_headers()]
    assert names == [
        ("x-api-key", None),
        ("api-key", None),
        ("x-goog-api-key", None),
        ("x-amz-security-token", None),
        ("authorization", BEARER),
        ("authorization", AWS_SIGV4),
    ]
    kept = providers.kept_headers(
        {"Content-Type": "a", "X-RateLimit-Remaining": "1", "Set-Cookie": "s", "request-id": "r"}
    )
    assert kept == {"content-type": "a", "x-ratelimit-remaining": "1", "request-id": "r"}


@pytest.mark.parametrize(
    ("header", "headers", "value"),
    [
        (CredentialHeader("x-api-key"), {"x-api-key": "k"}, "k"),
        (CredentialHeader("x-api-key"), {}, ""),
        (CredentialHeader("authorization", BEARER), {"authorization": "Bearer  t "}, "t"),
        (CredentialHeader("authorization", BEARER), {"authorization": "bearer t"}, "t"),
        (CredentialHeader("authorization", BEARER), {"authorization": "Basic t"}, ""),
        (
            CredentialHeader("authorization", AWS_SIGV4),
            {"authorization": "AWS4-HMAC-SHA256 Credential=AKIAX/20261130/us-east-1/bedrock/"},
            "AKIAX",
        ),
        (CredentialHeader("authorization", AWS_SIGV4), {"authorization": "Bearer t"}, ""),
    ],
)
def test_a_credential_header_reads_its_value(header, headers, value):
    assert header.value(headers) == value
