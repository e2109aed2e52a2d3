"""Vertex AI through the real clients: Gemini with ``google-genai`` (``vertexai=True``),
Claude with the Anthropic SDK's ``AnthropicVertex`` (Claude Code on Vertex AI:
``test_claude_code_clouds``). Each is recorded through ``otel-replay record`` against the
stub upstream, authenticated by Google's own auth library (workload identity federation
whose token exchange the stub serves), then replayed strictly with the stub stopped,
under another project and location and with no Google credentials at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from anthropic import AnthropicVertex, BadRequestError

from otel_replay import providers
from otel_replay.cassette.model import load
from otel_replay.core import envvars as ev
from otel_replay.gateway.environment import agent_environment
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.providers import vertex
from otel_replay.testing.stub import STS_PATH, run_stub

CLI = [sys.executable, "-m", "otel_replay"]
GEMINI = "gemini-2.5-flash"
CLAUDE = "claude-sonnet-4@20250514"
EXPRESS_KEY = "AIzaSyD3mo-vertex-express-key-012345678"  # the shape of a Google API key
_FOREIGN = ("GOOGLE_", "GEMINI_", "ANTHROPIC_", "CLOUD_ML_", "CLOUDSDK_", "CLAUDE", "OTEL_", "CI")
_PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")

GEMINI_AGENT = textwrap.dedent(
    """
    import json, sys
    from google import genai
    from google.genai import types

    project, location, key = sys.argv[1:4]
    client = genai.Client(vertexai=True, project=project, location=location)
    config = types.GenerateContentConfig(system_instruction="Be brief.")
    out = {"plain": client.models.generate_content(
        model="MODEL", contents=sys.argv[4], config=config).text}
    stream = client.models.generate_content_stream(model="MODEL", contents="stream me")
    out["stream"] = [chunk.text for chunk in stream]
    out["tokens"] = client.models.count_tokens(model="MODEL", contents="count me").total_tokens
    express = genai.Client(vertexai=True, api_key=key)  # express mode: an API key alone
    out["express"] = express.models.generate_content(model="MODEL", contents="quick").text
    print(json.dumps(out))
    """
).replace("MODEL", GEMINI)
"""A Gemini agent on Vertex AI: argv is project, location, express-mode key, prompt."""

CLAUDE_AGENT = textwrap.dedent(
    """
    import json, sys
    from anthropic import AnthropicVertex

    client = AnthropicVertex()  # project and region from the environment
    question = [{"role": "user", "content": sys.argv[1]}]
    message = client.messages.create(
        model="MODEL", max_tokens=64, system="Be brief.", messages=question
    )
    out = {"plain": message.content[0].text}
    streamed = [{"role": "user", "content": "stream me"}]
    with client.messages.stream(model="MODEL", max_tokens=64, messages=streamed) as stream:
        out["stream"] = "".join(stream.text_stream)
    out["tokens"] = client.messages.count_tokens(model="MODEL", messages=question).input_tokens
    print(json.dumps(out))
    """
).replace("MODEL", CLAUDE)
"""A Claude agent on Vertex AI: argv is the prompt."""


def _environment(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without Google's, Anthropic's or OTel's variables (so
    no credential of this machine's is found), ``home`` as HOME, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(_FOREIGN)}
    env = {k: v for k, v in env.items() if k.upper() not in _PROXIES}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return {**env, "HOME": str(home), "NO_PROXY": "127.0.0.1,localhost", **extra}


def _federation(folder: Path, stub_url: str) -> Path:
    """Application Default Credentials of a workload identity federation whose token
    exchange is the stub's (Google's STS): the credentials a CI job or a workload has."""
    path = folder / "federation.json"
    subject = folder / "subject-token"
    subject.write_text("a-workload-identity-token")
    source = {"file": str(subject)}
    path.write_text(
        json.dumps(
            {
                "type": "external_account",
                "audience": "//iam.googleapis.com/locations/global/workloadIdentityPools/"
                "ci/providers/ci",
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                "token_url": stub_url + STS_PATH,
                "credential_source": source,
            }
        )
    )
    return path


def _run(
    args: list[str], agent: list[str], cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [*CLI, *args, "--", *agent],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def _replayed(done: subprocess.CompletedProcess[str], calls: int) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    assert f"otel-replay: {calls} replayed · 0 live · 0 misses" in done.stderr
    answers: dict[str, Any] = json.loads(done.stdout)
    return answers


def _bearers(received: list[Any]) -> set[str]:
    return {r.headers.get("authorization", "") for r in received if r.path != STS_PATH}


# -- Gemini on Vertex AI (google-genai) --------------------------------------------------


def _recorded(
    tmp: Path, source: str, upstream: str, suffix: str, argv: list[str], **account: str
) -> dict[str, Any]:
    """``otel-replay record`` of the agent ``source`` (with ``argv``) against the stub as
    the ``upstream`` (its URL plus ``suffix``), authenticated by a workload identity
    federation, with the Vertex AI ``account`` variables: the script, the cassette, the
    run and what the stub received."""
    script = tmp / "agent.py"
    script.write_text(source)
    cassette = tmp / "c.json"
    with run_stub() as stub:
        federation = str(_federation(tmp, stub.url))
        env = _environment(tmp / "home", GOOGLE_APPLICATION_CREDENTIALS=federation, **account)
        args = ["record", "--cassette", str(cassette), "--traces", str(tmp / "t.jsonl")]
        args += [f"--upstream-{upstream}", stub.url + suffix]
        done = _run(args, [sys.executable, str(script), *argv], tmp / "work", env)
        received = list(stub.received)
    assert done.returncode == 0, done.stderr
    return {"tmp": tmp, "script": script, "cassette": cassette, "done": done, "got": received}


def _provider_names(traces: Path) -> list[str]:
    """``gen_ai.provider.name`` of each recorded call's span in a trace file."""
    names = []
    for line in traces.read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    attrs = {a["key"]: a["value"] for a in span["attributes"]}
                    if "gen_ai.provider.name" in attrs:
                        names.append(attrs["gen_ai.provider.name"]["stringValue"])
    return names


@pytest.fixture(scope="module")
def gemini(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("vertex-gemini")
    argv = ["rec-project", "us-central1", EXPRESS_KEY, "hi"]
    return _recorded(tmp, GEMINI_AGENT, "vertex", "", argv)


def test_gemini_on_vertex_records_through_the_gateway_with_google_auth(gemini):
    got, tmp = gemini["got"], gemini["tmp"]
    place = "/v1beta1/projects/rec-project/locations/us-central1/publishers/google/models"
    assert [(r.path, r.query) for r in got if r.path != STS_PATH] == [
        (f"{place}/{GEMINI}:generateContent", ""),
        (f"{place}/{GEMINI}:streamGenerateContent", "alt=sse"),
        (f"{place}/{GEMINI}:countTokens", ""),
        (f"/v1beta1/publishers/google/models/{GEMINI}:generateContent", ""),
    ]
    assert got[0].path == STS_PATH  # google-auth exchanged the workload's token first
    tokens = _bearers(got) - {""}
    assert len(tokens) == 1 and next(iter(tokens)).startswith("Bearer ya29.stub-")
    assert got[-1].headers.get("x-goog-api-key") == EXPRESS_KEY
    answers = json.loads(gemini["done"].stdout)
    assert answers["plain"] == "stub reply to: hi"
    assert "".join(answers["stream"]) == "stub reply to: stream me"
    assert answers["express"] == "stub reply to: quick"
    assert "4 live" in gemini["done"].stderr
    token = next(iter(tokens)).removeprefix("Bearer ")
    for stored in (gemini["cassette"], tmp / "t.jsonl"):  # neither credential reaches disk
        text = stored.read_text()
        assert token not in text and EXPRESS_KEY not in text
    assert _provider_names(tmp / "t.jsonl") == ["gcp.vertex_ai"] * 4  # as semconv names it
    exchanges = load(gemini["cassette"]).interactions  # built from those spans
    assert {ex.provider for ex in exchanges} == {"gcp.gemini"}
    assert [ex.request.endpoint for ex in exchanges] == [
        f"/v1beta1/publishers/google/models/{GEMINI}:generateContent",
        f"/v1beta1/publishers/google/models/{GEMINI}:streamGenerateContent",
        f"/v1beta1/publishers/google/models/{GEMINI}:countTokens",
        f"/v1beta1/publishers/google/models/{GEMINI}:generateContent",
    ]  # the project and the location are the account, not the question
    assert exchanges[0].request.model == GEMINI


def test_gemini_on_vertex_replays_under_another_project_with_no_google_credentials(
    gemini, tmp_path
):
    env = _environment(tmp_path / "elsewhere", CI="true")
    other_key = "AIzaSyD3mo-another-express-key-98765432"
    agent = [sys.executable, str(gemini["script"]), "other-proj", "europe-west4", other_key, "hi"]
    args = ["replay", "--cassette", str(gemini["cassette"]), "--mode", "strict"]
    done = _run(args, agent, tmp_path / "work", env)
    assert _replayed(done, 4) == json.loads(gemini["done"].stdout)


def test_a_changed_prompt_on_vertex_misses(gemini, tmp_path):
    env = _environment(tmp_path / "home", CI="true")
    agent = [sys.executable, str(gemini["script"]), "rec-project", "us-central1", "k", "bye"]
    args = ["replay", "--cassette", str(gemini["cassette"]), "--mode", "strict"]
    done = _run(args, agent, tmp_path / "work", env)
    assert done.returncode != 0
    assert "replay miss: messages changed" in done.stderr


def test_a_client_configured_only_from_the_environment_is_refused_with_the_fix(gemini, tmp_path):
    """Given a base URL, google-genai leaves the model and method out of the path unless
    the code names the project and location: the run says so and fails."""
    script = tmp_path / "env_only.py"
    script.write_text(
        "from google import genai\n"
        "client = genai.Client(vertexai=True)\n"
        "client.models.generate_content(model='m', contents='x')\n"
    )
    env = _environment(tmp_path / "home", GOOGLE_CLOUD_PROJECT="p", GOOGLE_CLOUD_LOCATION="global")
    args = ["replay", "--cassette", str(gemini["cassette"]), "--mode", "strict"]
    done = _run(args, [sys.executable, str(script)], tmp_path / "work", env)
    assert done.returncode != 0
    assert "google-genai sent a Vertex AI call to the bare base URL" in done.stderr
    assert "genai.Client(vertexai=True, project=..., location=...)" in done.stderr


_TRACED = textwrap.dedent(
    """
    import sys
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    direct = sys.argv[1] if sys.argv[1] != "-" else None  # else the environment's base URL
    """
)
TRACED_GEMINI = _TRACED + textwrap.dedent(
    """
    from google import genai
    from google.genai import types
    from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor

    GoogleGenAiSdkInstrumentor().instrument()
    options = types.HttpOptions(base_url=direct) if direct else None
    client = genai.Client(
        vertexai=True, project=sys.argv[2], location=sys.argv[3], http_options=options
    )
    config = types.GenerateContentConfig(system_instruction="Be brief.")
    first = client.models.generate_content(model="MODEL", contents="hello", config=config)
    second = client.models.generate_content(model="MODEL", contents="and again")
    print(first.text, "|", second.text)
    provider.shutdown()
    """
).replace("MODEL", GEMINI)
"""Gemini on Vertex AI traced by the Google GenAI instrumentation: argv is the provider's
URL (``-``: the environment's), the project and the location."""
TRACED_CLAUDE = _TRACED + textwrap.dedent(
    """
    from anthropic import AnthropicVertex

    client = AnthropicVertex(base_url=direct) if direct else AnthropicVertex()
    question = [{"role": "user", "content": "hello"}]
    first = client.messages.create(
        model="MODEL", max_tokens=64, system="Be brief.", messages=question
    )
    print(first.content[0].text)
    provider.shutdown()
    """
).replace("MODEL", CLAUDE)
"""Claude on Vertex AI traced by the Anthropic SDK itself (content captured): argv is the
provider's URL (``-``: the environment's)."""
GEMINI_CALL = ("gcp.gemini", GEMINI)
_CAPTURE = {
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
    "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
    "ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE": "content",
}


@pytest.mark.parametrize(
    ("source", "suffix", "account", "elsewhere", "built"),
    [
        (
            TRACED_GEMINI,
            "",
            ["prod", "us-central1"],
            ["ci", "europe-west4"],
            [("gcp.gemini", GEMINI)] * 2,
        ),
        (TRACED_CLAUDE, "/v1", [], [], [("anthropic", CLAUDE)]),
    ],
    ids=["gemini-genai-instrumentation", "claude-anthropic-sdk-tracing"],
)
def test_a_production_trace_of_a_vertex_agent_builds_a_cassette_that_replays(
    tmp_path, source, suffix, account, elsewhere, built
):
    """The agent talks to the provider directly (the stub standing in) and exports its
    spans to a collector; ``build`` turns them into a cassette, and the unchanged agent
    replays strictly through the gateway under another account, with no credentials."""
    script, traces, cassette = tmp_path / "agent.py", tmp_path / "t.jsonl", tmp_path / "c.json"
    script.write_text(source)
    claude_account = {"ANTHROPIC_VERTEX_PROJECT_ID": "prod", "CLOUD_ML_REGION": "us-east5"}
    with run_stub() as stub:
        config = GatewayConfig(mode="record", cassette=None, traces=traces, grpc_port=None)
        with GatewayThread(config) as gw:  # a collector: it only receives the spans
            telemetry = {k: v for k, v in gw.env.items() if k.startswith("OTEL_EXPORTER")}
            federation = str(_federation(tmp_path, stub.url))
            env = _environment(
                tmp_path / "home",
                GOOGLE_APPLICATION_CREDENTIALS=federation,
                **_CAPTURE,
                **claude_account,
            )
            production = subprocess.run(
                [sys.executable, str(script), stub.url + suffix, *account],
                env={**env, **telemetry},
                capture_output=True,
                text=True,
                timeout=120,
            )
            gw.stop()
    assert production.returncode == 0, production.stderr
    done = _run(["build", str(traces), "-o", str(cassette)], [], tmp_path, env)
    assert done.returncode == 0, done.stderr
    exchanges = load(cassette).interactions
    assert [(ex.provider, ex.request.model) for ex in exchanges] == built
    env = _environment(tmp_path / "ci", CI="true", **_CAPTURE)
    args = ["replay", "--cassette", str(cassette), "--mode", "strict"]
    done = _run(args, [sys.executable, str(script), "-", *elsewhere], tmp_path / "work", env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == production.stdout
    assert f"{len(built)} replayed · 0 live · 0 misses" in done.stderr


# -- Claude on Vertex AI (AnthropicVertex) ----------------------------------------------


@pytest.fixture(scope="module")
def claude(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("vertex-claude")
    account = {"ANTHROPIC_VERTEX_PROJECT_ID": "rec-project", "CLOUD_ML_REGION": "us-east5"}
    return _recorded(tmp, CLAUDE_AGENT, "vertex-anthropic", "/v1", ["hello"], **account)


def test_claude_on_vertex_records_rawpredict_with_the_model_in_the_path(claude):
    place = "/v1/projects/rec-project/locations/us-east5/publishers/anthropic/models"
    assert [r.path for r in claude["got"] if r.path != STS_PATH] == [
        f"{place}/{CLAUDE}:rawPredict",
        f"{place}/{CLAUDE}:streamRawPredict",
        f"{place}/count-tokens:rawPredict",
    ]
    assert all(b.startswith("Bearer ya29.stub-") for b in _bearers(claude["got"]))
    answers = json.loads(claude["done"].stdout)
    assert answers == {
        "plain": "stub reply to: hello",
        "stream": "stub reply to: stream me",
        "tokens": answers["tokens"],
    }
    assert "ya29." not in claude["cassette"].read_text()
    assert _provider_names(claude["tmp"] / "t.jsonl") == ["gcp.vertex_ai"] * 3
    exchanges = load(claude["cassette"]).interactions
    assert [(ex.provider, ex.operation) for ex in exchanges] == [
        ("anthropic", "messages"),
        ("anthropic", "messages"),
        ("anthropic", "count_tokens"),
    ]
    assert exchanges[0].request.model == CLAUDE  # read from the path: the body has none
    sent = next(r.body for r in claude["got"] if r.path != STS_PATH)
    assert exchanges[0].request.params["anthropic_version"] == sent["anthropic_version"]


@pytest.mark.parametrize(
    "account",
    [
        {"ANTHROPIC_VERTEX_PROJECT_ID": "another", "CLOUD_ML_REGION": "europe-west1"},
        {},  # none at all: strict replay names a placeholder project and region
    ],
)
def test_claude_on_vertex_replays_elsewhere_with_no_google_credentials(claude, tmp_path, account):
    env = _environment(tmp_path / "home", CI="true", **account)
    args = ["replay", "--cassette", str(claude["cassette"]), "--mode", "strict"]
    done = _run(args, [sys.executable, str(claude["script"]), "hello"], tmp_path / "w", env)
    assert _replayed(done, 3) == json.loads(claude["done"].stdout)


def test_auto_mode_forwards_a_claude_miss_only_with_a_token_of_the_callers(claude, tmp_path):
    """A minted token is nobody's key in the environment: in auto mode a miss carrying a
    real token goes live, one carrying the placeholder token does not."""
    cassette = tmp_path / "c.json"
    cassette.write_bytes(claude["cassette"].read_bytes())
    with run_stub() as stub:
        config = GatewayConfig(mode="auto", cassette=cassette, grpc_port=None, environ={})
        config.upstreams = {"vertex-anthropic": stub.url + "/v1"}
        with GatewayThread(config) as gw:
            base = gw.env[ev.ANTHROPIC_VERTEX_BASE_URL]
            question = [{"role": "user", "content": "a new question"}]
            own = AnthropicVertex(
                region="us-east5", project_id="p", access_token="ya29.own", base_url=base
            )
            text = own.messages.create(model=CLAUDE, max_tokens=9, messages=question)
            stranger = AnthropicVertex(
                region="us-east5", project_id="p", access_token=ev.PLACEHOLDER_KEY, base_url=base
            )
            other = [{"role": "user", "content": "another new one"}]
            with pytest.raises(BadRequestError):
                stranger.messages.create(model=CLAUDE, max_tokens=9, messages=other)
            summary = gw.stop()
        forwarded = [r.headers.get("authorization") for r in stub.received]
    assert text.content[0].text == "stub reply to: a new question"  # type: ignore[union-attr]
    assert forwarded == ["Bearer ya29.own"]
    assert (summary.live, len(summary.misses)) == (1, 1)


# -- the pieces: where calls go, what the agent is given ---------------------------------


def test_a_live_call_goes_to_the_host_of_the_location_in_its_path():
    row = providers.spec("vertex")
    assert row is not None
    project = "/v1beta1/projects/p/locations/{}/publishers/google/models/m:generateContent"
    assert row.public_base(project.format("us-central1")) == (
        "https://us-central1-aiplatform.googleapis.com"
    )
    assert row.public_base(project.format("global")) == "https://aiplatform.googleapis.com"
    assert row.public_base(project.format("eu")) == "https://aiplatform.eu.rep.googleapis.com"
    express = "/v1beta1/publishers/google/models/m:generateContent"
    assert row.public_base(express) == "https://aiplatform.googleapis.com"


def test_replay_gives_credentials_whose_token_the_gateway_mints(tmp_path):
    url = "http://127.0.0.1:9"
    env = agent_environment(url, None, "strict", {"HOME": str(tmp_path)})
    credentials = json.loads(Path(env[ev.GOOGLE_APPLICATION_CREDENTIALS]).read_text())
    assert credentials["token_url"] == url + vertex.TOKEN_PATH
    assert credentials["type"] == "external_account"
    assert env[ev.CLAUDE_CODE_SKIP_VERTEX_AUTH] == "1"
    assert env[ev.ANTHROPIC_VERTEX_PROJECT_ID] == vertex.PLACEHOLDER_PROJECT
    own = {ev.GOOGLE_APPLICATION_CREDENTIALS: "/mine.json", ev.CLOUD_ML_REGION: "us-east5"}
    kept = agent_environment(url, None, "strict", own)
    assert ev.GOOGLE_APPLICATION_CREDENTIALS not in kept and ev.CLOUD_ML_REGION not in kept
    assert ev.GOOGLE_APPLICATION_CREDENTIALS not in agent_environment(url, None, "record", {})
    gcloud = tmp_path / "gcloud"  # a gcloud login: auto mode records with it
    gcloud.mkdir()
    (gcloud / "application_default_credentials.json").write_text("{}")
    auto = agent_environment(url, None, "auto", {ev.CLOUDSDK_CONFIG: str(gcloud)})
    assert ev.GOOGLE_APPLICATION_CREDENTIALS not in auto
    assert ev.GOOGLE_APPLICATION_CREDENTIALS in agent_environment(url, None, "auto", {})


def test_the_placeholder_credentials_go_when_the_gateway_stops(tmp_path):
    home = {"HOME": str(tmp_path)}  # no gcloud login: auto mode mints tokens too
    config = GatewayConfig(mode="auto", cassette=tmp_path / "none.json", environ=home)
    with GatewayThread(config) as gw:
        written = Path(gw.env[ev.GOOGLE_APPLICATION_CREDENTIALS])
        assert json.loads(written.read_text())["token_url"].endswith(vertex.TOKEN_PATH)
    assert not written.exists()


def test_credentials_that_cannot_be_written_are_said_and_not_given(tmp_path, monkeypatch, caplog):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(blocked / "tmp"))  # not a directory
    env = agent_environment("http://127.0.0.1:9", None, "strict", {})
    assert ev.GOOGLE_APPLICATION_CREDENTIALS not in env
    assert "could not write placeholder Google credentials" in caplog.text


async def test_the_token_exchange_is_answered_and_never_counted(tmp_path):
    config = GatewayConfig(mode="auto", cassette=tmp_path / "none.json", environ={})
    with GatewayThread(config) as gw:
        url = gw.env[ev.OTEL_REPLAY_URL] + vertex.TOKEN_PATH
        async with aiohttp.ClientSession() as session:
            async with session.post(url, data={"grant_type": "token-exchange"}) as response:
                status, body = response.status, await response.json()
        summary = gw.stop()
    assert status == 200 and body["access_token"] == ev.PLACEHOLDER_KEY
    assert (summary.replayed, summary.live, summary.misses) == (0, 0, [])
