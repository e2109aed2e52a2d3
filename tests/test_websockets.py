"""Model calls over WebSockets, with the official SDKs as their users run them: the
Responses API's WebSocket mode (``client.responses.connect()``) and the Realtime API
(``client.realtime.connect()``) of ``openai``, and the Gemini Live API of ``google-genai``
(``client.aio.live.connect``). Each session records through the gateway against the stub
upstream speaking the APIs' frames, then replays strictly with the upstream stopped, the
same output; a changed prompt misses, naming the component, as the API's own error."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from otel_replay.cassette.model import load
from otel_replay.gateway.local_tls import tls_environment
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.testing.stub import Fault, run_stub

KEY = "sk-test-websockets-0123456789"
MODEL = "gpt-5.5"


@dataclass
class Outcome:
    output: Any
    summary: Any


def _gateway_run(config: GatewayConfig, session: Callable[[str], Awaitable[Any]]) -> Outcome:
    with GatewayThread(config) as gateway:
        assert gateway.server is not None
        output = asyncio.run(session(f"http://127.0.0.1:{gateway.server.port}"))
        summary = gateway.stop()
    return Outcome(output, summary)


@contextmanager
def _environ(values: Mapping[str, str]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# -- the sessions, as an agent writes them ---------------------------------------------------


async def responses_session(url: str, prompts: tuple[str, str] = ("hello", "and again")) -> Any:
    """Two turns over one connection, the second continuing the first."""
    client = openai.AsyncOpenAI(api_key=KEY, base_url=f"{url}/v1", max_retries=0)
    texts: list[Any] = []
    async with client.responses.connect() as connection:
        previous = None
        for prompt in prompts:
            await connection.response.create(
                model=MODEL, input=prompt, previous_response_id=previous or openai.omit
            )
            text = ""
            async for event in connection:
                if event.type == "response.output_text.delta":
                    text += event.delta
                elif event.type == "response.completed":
                    previous = event.response.id
                    break
                elif event.type == "error":
                    texts.append(("error", event.error.message))
                    return texts
            texts.append(text)
    return texts


TURNS = ("hello", "and again", "once more")


async def conversation_session(url: str, prompts: tuple[str, ...] = TURNS) -> Any:
    """An agent that keeps its conversation itself: each turn sends it whole, the last
    answer and the new prompt added (no ``previous_response_id``)."""
    client = openai.AsyncOpenAI(api_key=KEY, base_url=f"{url}/v1", max_retries=0)
    history: list[Any] = []
    async with client.responses.connect() as connection:
        for prompt in prompts:
            history.append({"role": "user", "content": prompt})
            await connection.response.create(model=MODEL, store=False, input=history)
            async for event in connection:
                if event.type == "response.completed":
                    history.append({"role": "assistant", "content": event.response.output_text})
                    break
    return history


async def realtime_session(url: str, prompt: str = "what is the weather?") -> Any:
    client = openai.AsyncOpenAI(api_key=KEY, base_url=f"{url}/v1", max_retries=0)
    seen: list[Any] = []
    async with client.realtime.connect(model="gpt-realtime") as connection:
        await connection.session.update(
            session={"type": "realtime", "instructions": "Be brief.", "output_modalities": ["text"]}
        )
        await connection.conversation.item.create(
            item={
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": prompt}],
            }
        )
        await connection.response.create()
        text = ""
        async for event in connection:
            seen.append(event.type)
            if event.type == "response.output_text.delta":
                text += event.delta
            elif event.type == "error":
                return ("error", event.error.message)
            elif event.type == "response.done":
                break
    return (text, [kind for kind in seen if not kind.startswith("response.output_text")])


async def realtime_audio_session(url: str) -> list[bytes]:
    """A spoken answer: the server's frames as received, up to ``response.done``."""
    client = openai.AsyncOpenAI(api_key=KEY, base_url=f"{url}/v1", max_retries=0)
    frames: list[bytes] = []
    async with client.realtime.connect(model="gpt-realtime") as connection:
        await connection.session.update(
            session={"type": "realtime", "output_modalities": ["audio"]}
        )
        await connection.conversation.item.create(
            item={"type": "message", "role": "user", "content": [_said("hello hello")]}
        )
        await connection.response.create()
        while not frames or connection.parse_event(frames[-1]).type != "response.done":
            frames.append(await connection.recv_bytes())
    return frames


def _said(text: str) -> dict[str, str]:
    return {"type": "input_text", "text": text}


LIVE_PATH = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"


async def live_session(url: str, prompt: str = "tell me a joke") -> Any:
    # with an API key google-genai dials wss:// only: the gateway answers TLS on its port,
    # its certificate trusted through SSL_CERT_FILE, as `record -- CMD` gives the agent
    options = {"base_url": url.replace("http://", "https://")}
    with _environ(tls_environment(os.environ)):  # read as the client is made
        client = genai.Client(api_key="AIza-test-websockets", http_options=options)
    return await _live_turns(client, prompt)


VERTEX_PATH = "/ws/google.cloud.aiplatform.v1beta1.LlmBidiService/BidiGenerateContent"


async def vertex_live_session(url: str, prompt: str = "tell me a joke") -> Any:
    # its Vertex AI form dials a proxy's address as given, the key in a header
    options = {
        "base_url": url.replace("http://", "wss://") + VERTEX_PATH,
        "headers": {"x-goog-api-key": "AIza-test-websockets"},
    }
    with _environ(tls_environment(os.environ)):
        client = genai.Client(vertexai=True, http_options=options)
    return await _live_turns(client, prompt)


async def _live_turns(client: genai.Client, prompt: str) -> Any:
    config = genai_types.LiveConnectConfig(
        response_modalities=[genai_types.Modality.TEXT], system_instruction="Be brief."
    )
    text = ""
    async with client.aio.live.connect(model="gemini-live-2.5-flash", config=config) as live:
        await live.send_client_content(
            turns=genai_types.Content(role="user", parts=[genai_types.Part(text=prompt)]),
            turn_complete=True,
        )
        async for message in live.receive():
            if message.text:
                text += message.text
            if message.server_content and message.server_content.turn_complete:
                break
    return text


# -- recorded once, replayed --------------------------------------------------------------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[Path, Outcome]]]:
    root = tmp_path_factory.mktemp("websockets")
    sessions = {
        "responses": responses_session,
        "conversation": conversation_session,
        "realtime": realtime_session,
        "audio": realtime_audio_session,
        "live": live_session,
        "vertex": vertex_live_session,
    }
    done: dict[str, tuple[Path, Outcome]] = {}
    with run_stub() as stub:
        for name, session in sessions.items():
            cassette = root / f"{name}.json"
            config = GatewayConfig(
                mode="record",
                cassette=cassette,
                upstream_openai=stub.openai_url,
                upstreams={"gemini": stub.url, "vertex": stub.url},
            )
            done[name] = (cassette, _gateway_run(config, session))
        upgrades = [(r.method, r.path) for r in stub.received]
    assert upgrades == [
        ("GET", "/v1/responses"),
        ("GET", "/v1/responses"),
        ("GET", "/v1/realtime"),
        ("GET", "/v1/realtime"),
        ("GET", LIVE_PATH),
        ("GET", VERTEX_PATH),
    ]
    yield done


def _replay(cassette: Path, session: Callable[[str], Awaitable[Any]], **options: Any) -> Outcome:
    config = GatewayConfig(mode="strict", cassette=cassette, **options)
    return _gateway_run(config, session)


def test_responses_websocket_mode_records_and_replays(recorded):
    cassette, live = recorded["responses"]
    assert live.output == ["stub reply to: hello", "stub reply to: and again"]
    assert (live.summary.live, live.summary.misses) == (2, [])
    first, second = load(cassette).interactions
    assert first.request.endpoint == second.request.endpoint == "/v1/responses"
    assert first.response.events[-1].event == "response.completed"
    # the continuation names the response it continues
    assert second.request.params["previous_response_id"].startswith("resp_")
    assert KEY not in cassette.read_text()
    again = _replay(cassette, responses_session)
    assert again.output == live.output
    assert (again.summary.replayed, again.summary.live, again.summary.misses) == (2, 0, [])


def test_a_changed_prompt_misses_over_the_responses_websocket(recorded):
    cassette, _ = recorded["responses"]
    missed = _replay(cassette, lambda url: responses_session(url, ("hello", "something else")))
    assert missed.output[0] == "stub reply to: hello"
    kind, message = missed.output[1]
    assert kind == "error" and "replay miss" in message
    (miss,) = missed.summary.misses
    assert miss.startswith("replay miss: messages changed"), miss
    assert message == miss


def test_a_conversation_sent_whole_replays_turn_by_turn_as_over_http(recorded):
    cassette, live = recorded["conversation"]
    assert [m["content"] for m in live.output[1::2]] == [f"stub reply to: {p}" for p in TURNS]
    again = _replay(cassette, conversation_session)
    assert again.output == live.output
    # after the first, each turn is matched by what it adds, as an HTTP turn is
    assert (again.summary.replayed, again.summary.by_turn, again.summary.misses) == (3, 2, [])


def test_realtime_text_session_records_and_replays(recorded):
    cassette, live = recorded["realtime"]
    text, kinds = live.output
    assert text == "stub reply to: what is the weather?"
    assert kinds[:3] == ["session.created", "session.updated", "conversation.item.added"]
    assert kinds[-1] == "response.done"
    (interaction,) = load(cassette).interactions
    assert interaction.request.endpoint == "/v1/realtime"
    assert interaction.request.model == "gpt-realtime"
    assert interaction.request.system == [{"type": "text", "content": "Be brief."}]
    again = _replay(cassette, realtime_session)
    assert again.output == live.output
    assert (again.summary.replayed, again.summary.misses) == (1, [])
    missed = _replay(cassette, lambda url: realtime_session(url, "what time is it?"))
    assert missed.output[0] == "error" and "replay miss" in missed.output[1]
    (miss,) = missed.summary.misses
    assert miss.startswith("replay miss: messages changed"), miss


def test_realtime_audio_is_kept_once_by_reference_and_replays_byte_for_byte(recorded):
    cassette, live = recorded["audio"]
    events = [json.loads(frame) for frame in live.output]
    audio = [e["delta"] for e in events if e["type"] == "response.output_audio.delta"]
    assert len(audio) == 5 and len(set(audio)) == 4  # "hello" said twice, the same audio
    text = cassette.read_text()
    table = json.loads(text)["table"]
    for chunk in set(audio):  # each payload once, in the table; the frames refer to it
        assert text.count(chunk) == 1
        assert chunk in table.values()
    (interaction,) = load(cassette).interactions
    assert [e.data.encode() for e in interaction.response.events] == live.output
    again = _replay(cassette, realtime_audio_session)
    assert again.output == live.output  # the same frames, byte for byte
    assert (again.summary.replayed, again.summary.misses) == (1, [])


def test_gemini_live_text_session_records_and_replays(recorded):
    cassette, live = recorded["live"]
    assert live.output == "stub reply to: tell me a joke"
    (interaction,) = load(cassette).interactions
    assert interaction.provider == "gcp.gemini"
    assert interaction.request.model == "gemini-live-2.5-flash"
    again = _replay(cassette, live_session)
    assert again.output == live.output
    assert (again.summary.replayed, again.summary.misses) == (1, [])
    with pytest.raises(Exception, match="replay miss"):
        _replay(cassette, lambda url: live_session(url, "tell me another"))


def test_gemini_live_on_vertex_ai_records_and_replays(recorded):
    cassette, live = recorded["vertex"]
    assert live.output == "stub reply to: tell me a joke"
    again = _replay(cassette, vertex_live_session)
    assert again.output == live.output
    assert (again.summary.replayed, again.summary.misses) == (1, [])


def test_frames_keep_their_times_and_replay_at_the_recorded_pace_when_asked(recorded):
    cassette, live = recorded["responses"]
    for interaction in load(cassette).interactions:
        times = [event.t for event in interaction.response.events]
        assert times == sorted(times) and times[-1] > 0  # relative to the call's first frame
    paced = _replay(cassette, responses_session, timing="recorded")
    assert paced.output == live.output


def test_an_upgrade_with_another_providers_key_is_never_forwarded(tmp_path):
    headers = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
        "Authorization": "Bearer sk-ant-api03-" + "a" * 90 + "-AAAAAAAA",
    }
    with run_stub() as stub:
        config = GatewayConfig(
            mode="record", cassette=tmp_path / "c.json", upstream_openai=stub.openai_url
        )
        with GatewayThread(config) as gateway:
            assert gateway.server is not None
            connection = http.client.HTTPConnection("127.0.0.1", gateway.server.port, timeout=10)
            connection.request("GET", "/v1/responses", headers=headers)
            answer = connection.getresponse()
            assert answer.status == 421
            assert b"Anthropic" in answer.read()
            connection.close()
            summary = gateway.stop()
        assert stub.received == []
    assert len(summary.misses) == 1


def _spans(traces: Path) -> list[dict[str, Any]]:
    spans = [
        span
        for line in traces.read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]
    for span in spans:
        span["attrs"] = {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}
    return [s for s in spans if "gen_ai.operation.name" in s["attrs"]]


def test_each_response_is_a_span_by_the_genai_conventions(recorded, tmp_path):
    cassette, live = recorded["responses"]
    traces, report = tmp_path / "replayed.jsonl", tmp_path / "report.json"
    again = _replay(cassette, responses_session, traces=traces, report=report)
    assert again.output == live.output
    spans = _spans(traces)
    assert len(spans) == 2  # one per response.create
    assert {s["traceId"] for s in spans} == {spans[0]["traceId"]}  # the connection's trace
    for span in spans:
        assert span["attrs"]["gen_ai.operation.name"] == "chat"
        assert span["attrs"]["gen_ai.request.model"] == MODEL
    assert "stub reply to: and again" in json.dumps(spans[1]["attrs"])
    assert json.loads(report.read_text())["replayed"] == 2


async def cut_session(url: str) -> Any:
    """One turn whose answer breaks off: what the SDK makes of it."""
    client = openai.AsyncOpenAI(api_key=KEY, base_url=f"{url}/v1", max_retries=0)
    kinds: list[str] = []
    try:
        async with client.responses.connect() as connection:
            await connection.response.create(model=MODEL, input="hello")
            async for event in connection:
                kinds.append(event.type)
    except Exception as exc:  # the connection's failure, as the SDK raises it
        kinds.append(type(exc).__name__)
    return kinds


def test_an_answer_cut_short_is_recorded_and_replays_cut_short(tmp_path):
    cassette = tmp_path / "cut.json"
    with run_stub() as stub:
        stub.enqueue(Fault("reset_mid_stream", after_events=3, path="/v1/responses"))
        config = GatewayConfig(mode="record", cassette=cassette, upstream_openai=stub.openai_url)
        live = _gateway_run(config, cut_session)
    (interaction,) = load(cassette).interactions
    assert interaction.response.fault == "reset_mid_stream"
    assert len(interaction.response.events) == 3
    assert live.output[:3] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
    ]
    again = _replay(cassette, cut_session)
    assert again.output == live.output
    assert (again.summary.replayed, again.summary.misses) == (1, [])


async def http_session(url: str) -> Any:
    """The same first turn over HTTP."""
    async with openai.AsyncOpenAI(api_key=KEY, base_url=f"{url}/v1", max_retries=0) as client:
        plain = await client.responses.create(model=MODEL, input="hello")
    return plain.output_text


def test_a_call_recorded_over_the_websocket_replays_over_http(recorded):
    cassette, live = recorded["responses"]
    again = _replay(cassette, http_session)
    assert again.output == live.output[0]
    assert again.summary.replayed == 1


def test_an_open_websocket_is_told_when_the_gateway_stops(recorded):
    cassette, _ = recorded["responses"]

    async def held_open(gateway: GatewayThread, port: int) -> int | None:
        async with aiohttp.ClientSession() as client:
            ws = await client.ws_connect(f"http://127.0.0.1:{port}/v1/responses")
            stopping = asyncio.get_running_loop().run_in_executor(None, gateway.stop)
            message = await ws.receive()
            await stopping
            assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
            return ws.close_code

    with GatewayThread(GatewayConfig(mode="strict", cassette=cassette)) as gateway:
        assert gateway.server is not None
        code = asyncio.run(held_open(gateway, gateway.server.port))
    assert code == aiohttp.WSCloseCode.GOING_AWAY
