"""No call and no key goes astray: each provider's key sent on a request meant for another
provider is never forwarded and never written, whatever official client sends it.

Two stub upstreams stand in for the providers: one for OpenAI, Anthropic and Azure
OpenAI, one for the Gemini API, so a call reaching the wrong one shows. A key shaped as
another API's key makes the call a counted, explained refusal (421); a credential header
only another provider declares is left out of the forward.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import errors, types
from multidict import CIMultiDict

from otel_replay import providers
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.providers.placement import Placements, misplaced, unplaced
from otel_replay.testing.stub import run_stub

GEMINI_KEY = "AIzaSyB7-astray-test-gemini-key-0123456"  # AIza + 35
AZURE_KEY = "9d1e7c3a5b2f4e6d8c0a1b3c5d7e9f02"
OPENAI_KEY = "sk-proj-astrayTestOpenAIKey0123456789abcdefXYZ"
KEYS = (GEMINI_KEY, AZURE_KEY, OPENAI_KEY)
AWS_SIGNED = (
    "AWS4-HMAC-SHA256 Credential=AKIAZ7ASTRAYTEST0001/20260101/us-east-1/bedrock/"
    "aws4_request, SignedHeaders=host;x-amz-date, Signature=" + "0f" * 32
)
CHAT = [{"role": "user", "content": "hi"}]
MODEL = "gemini-2.5-flash"


def refused(call: Any, error: type[Exception]) -> Any:
    with pytest.raises(error) as caught:
        call()
    return caught.value


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("astray")
    answers: dict[str, Any] = {}
    with run_stub() as general, run_stub() as google:
        config = GatewayConfig(
            mode="record",
            cassette=tmp / "c.json",
            traces=tmp / "t.jsonl",
            grpc_port=None,
            upstreams={
                "openai": general.openai_url,
                "anthropic": general.anthropic_url,
                "azure": general.url,
                "gemini": google.url,
            },
            environ={},
        )
        with GatewayThread(config) as gw, contextlib.ExitStack() as clients:
            env = gw.env

            def oai(**headers: str) -> openai.OpenAI:
                client = openai.OpenAI(
                    base_url=env["OPENAI_BASE_URL"],
                    api_key=OPENAI_KEY,
                    max_retries=0,
                    default_headers=headers,
                )
                return clients.enter_context(client)

            def gem(key: str, **headers: str) -> Any:
                options = types.HttpOptions(base_url=env["GOOGLE_GEMINI_BASE_URL"], headers=headers)
                client = genai.Client(api_key=key, http_options=options)
                clients.callback(client.close)
                return client.models

            def ask_openai(client: openai.OpenAI) -> Any:
                return client.chat.completions.create(model="gpt-4o", messages=CHAT)

            # a Gemini key on an OpenAI call, and on an Anthropic call
            answers["gemini_on_openai"] = refused(
                lambda: ask_openai(oai(**{"x-goog-api-key": GEMINI_KEY})), openai.APIStatusError
            )
            claude = anthropic.Anthropic(
                base_url=env["ANTHROPIC_BASE_URL"], api_key=GEMINI_KEY, max_retries=0
            )
            clients.enter_context(claude)
            answers["gemini_on_anthropic"] = refused(
                lambda: claude.messages.create(model="claude-x", max_tokens=8, messages=CHAT),
                anthropic.APIStatusError,
            )
            # an OpenAI key as the Gemini client's key, and as a bearer token beside it
            wrong = gem(OPENAI_KEY)
            answers["openai_on_gemini"] = refused(
                lambda: wrong.generate_content(model=MODEL, contents="hi"), errors.APIError
            )
            bearer = gem(GEMINI_KEY, authorization=f"Bearer {OPENAI_KEY}")
            answers["openai_bearer_on_gemini"] = refused(
                lambda: bearer.generate_content(model=MODEL, contents="hi"), errors.APIError
            )
            # an Azure key on an OpenAI call and on a Gemini call: left out of the forward
            answers["azure_on_openai"] = ask_openai(oai(**{"api-key": AZURE_KEY}))
            with_azure = gem(GEMINI_KEY, **{"api-key": AZURE_KEY})
            answers["azure_on_gemini"] = with_azure.generate_content(
                model=MODEL, contents="hi"
            ).text
            # a Gemini key as Azure OpenAI's key
            azure = openai.AzureOpenAI(
                azure_endpoint=env["AZURE_OPENAI_ENDPOINT"],
                api_key=GEMINI_KEY,
                api_version="2024-10-21",
                max_retries=0,
            )
            clients.enter_context(azure)
            answers["gemini_on_azure"] = refused(
                lambda: azure.chat.completions.create(model="gpt4o-prod", messages=CHAT),
                openai.APIStatusError,
            )
            # a model call no API claims, and a stray that is none
            plain = clients.enter_context(httpx.Client(base_url=env["OTEL_REPLAY_URL"]))
            headers = {"x-goog-api-key": GEMINI_KEY}
            answers["unplaced"] = plain.post("/v2/models/x:predict", headers=headers)
            answers["stray"] = plain.get("/healthz")
            # two Authorization headers, both forwarded: the foreign key in the first counts
            twice = [
                ("authorization", f"Bearer {GEMINI_KEY}"),
                ("authorization", f"Bearer {OPENAI_KEY}"),
            ]
            body = {"model": "gpt-4o", "messages": CHAT}
            answers["repeated"] = plain.post("/v1/chat/completions", headers=twice, json=body)
            # and two ?key= values on a Gemini call, the second an OpenAI key
            gemini = env["GOOGLE_GEMINI_BASE_URL"].removeprefix(env["OTEL_REPLAY_URL"])
            keys = f"key={GEMINI_KEY}&key={OPENAI_KEY}"
            contents = {"contents": [{"parts": [{"text": "hi"}]}]}
            path = f"{gemini}/v1beta/models/{MODEL}:generateContent?{keys}"
            answers["repeated_query"] = plain.post(path, json=contents)
            clients.close()
            summary = gw.stop()
        answers["general"] = list(general.received)
        answers["google"] = list(google.received)
    answers["summary"] = summary
    answers["tmp"] = tmp
    return answers


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("gemini_on_openai", "to OpenAI: its x-goog-api-key holds a Gemini API key"),
        ("gemini_on_anthropic", "to Anthropic: its authorization holds a Gemini API key"),
        ("openai_on_gemini", "to Gemini API: its x-goog-api-key holds an OpenAI key"),
        ("openai_bearer_on_gemini", "to Gemini API: its authorization holds an OpenAI key"),
        ("gemini_on_azure", "to Azure OpenAI: its api-key holds a Gemini API key"),
    ],
)
def test_a_key_of_another_api_is_refused_and_says_why(run, case, says):
    error = run[case]
    status = error.status_code if hasattr(error, "status_code") else error.code
    assert status == 421
    assert says in str(error)


def test_refusals_are_counted_misses_and_strays_are_not(run):
    misses = run["summary"].misses
    assert len(misses) == 8
    assert any("cannot place POST /v2/models/x:predict" in m for m in misses)
    assert run["unplaced"].status_code == 421
    assert run["stray"].status_code == 404
    assert run["repeated"].status_code == 421
    assert "its authorization holds a Gemini API key" in run["repeated"].text
    assert run["repeated_query"].status_code == 421
    assert "its query key holds an OpenAI key" in run["repeated_query"].text


def test_only_the_right_calls_reach_each_upstream_with_only_their_own_key(run):
    general, google = run["general"], run["google"]
    assert [r.path for r in general] == ["/v1/chat/completions"]
    assert general[0].headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert [r.path for r in google] == [f"/v1beta/models/{MODEL}:generateContent"]
    assert google[0].headers["x-goog-api-key"] == GEMINI_KEY
    for received in (*general, *google):
        assert "api-key" not in received.headers
    assert run["azure_on_openai"].choices[0].message.content == "stub reply to: hi"
    assert run["azure_on_gemini"] == "stub reply to: hi"


def test_no_key_reaches_disk(run):
    tmp: Path = run["tmp"]
    written = [p for p in tmp.rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"c.json", "t.jsonl"}
    for path in written:
        text = path.read_text()
        assert not [key for key in KEYS if key in text], path


def test_an_aws_signature_goes_to_bedrock_alone():
    """A SigV4-signed request is refused on every upstream but Bedrock's, and one no
    mount claims is a model call the gateway cannot place."""
    headers = {"authorization": AWS_SIGNED, "x-amz-date": "20260101T000000Z"}
    for row in providers.PROVIDERS:
        why = misplaced(row, headers)
        if row.name == "bedrock":
            assert why is None
        else:
            assert why == "its authorization holds an AWS Bedrock Runtime key"
    why = unplaced("POST", "/nowhere/converse", headers)
    assert why is not None and "it carries an AWS Bedrock Runtime credential" in why


def test_every_value_of_a_repeated_credential_header_is_looked_at():
    """Two ``Authorization`` headers are both forwarded, so both are checked: a foreign
    key in either makes the call misplaced, and a verdict remembered for one request is
    the one a fresh check gives the next."""
    placements = Placements()
    openai_row = providers.upstream_spec("openai")
    assert openai_row is not None
    for first, second in ((f"Bearer {GEMINI_KEY}", "Bearer x"), ("Bearer x", GEMINI_KEY)):
        headers = CIMultiDict([("Authorization", first), ("authorization", second)])
        for _ in range(2):  # the second time from memory
            assert placements.misplaced(openai_row, headers, "") == (
                "its authorization holds a Gemini API key"
            )
    own = CIMultiDict([("Authorization", f"Bearer {OPENAI_KEY}")])
    assert placements.misplaced(openai_row, own, "") is None
    assert placements.misplaced(openai_row, own, GEMINI_KEY) == (
        "its query key holds a Gemini API key"
    )
