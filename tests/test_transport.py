"""In process, without a socket: the official SDKs, built on ``httpx2`` (and ``httpx``),
record through :class:`ReplayTransport` / :class:`AsyncReplayTransport` against a stub
upstream, then replay strictly with sockets forbidden."""

from __future__ import annotations

import json
import socket
import textwrap
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from otel_replay import AsyncReplayTransport, ReplayMiss, ReplayTransport, record, replay
from otel_replay.testing.stub import Fault, StubUpstream, run_stub

pytest_plugins = ["pytester"]

KEYS = {"OPENAI_API_KEY": "sk-test-transport-0000", "ANTHROPIC_API_KEY": "sk-ant-test-0000"}
EXPECTED = [
    "stub reply to: hello",
    "stub reply to: stream on",
    "stub reply to: hello",
    "stub reply to: stream on",
]


def forbid_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    """No socket can be opened from here on (a connection attempt raises)."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError("otel-replay test: sockets are forbidden")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def sdk_calls(http_client: Any) -> list[str]:
    """Plain and streamed calls of both SDKs through ``http_client``."""
    oa = openai.OpenAI(api_key=KEYS["OPENAI_API_KEY"], http_client=http_client, max_retries=0)
    an = anthropic.Anthropic(
        api_key=KEYS["ANTHROPIC_API_KEY"], http_client=http_client, max_retries=0
    )
    said = [{"role": "user", "content": "hello"}]
    streamed = [{"role": "user", "content": "stream on"}]
    reply = oa.chat.completions.create(model="gpt-4o-mini", messages=said)  # type: ignore[arg-type]
    chunks = oa.chat.completions.create(model="gpt-4o-mini", messages=streamed, stream=True)  # type: ignore[arg-type]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    message = an.messages.create(model="claude-x", max_tokens=64, messages=said)  # type: ignore[arg-type]
    with an.messages.stream(model="claude-x", max_tokens=64, messages=streamed) as events:  # type: ignore[arg-type]
        told = "".join(events.text_stream)
    return [reply.choices[0].message.content or "", text, message.content[0].text, told]  # type: ignore[union-attr]


async def async_sdk_calls(http_client: Any) -> list[str]:
    oa = openai.AsyncOpenAI(api_key=KEYS["OPENAI_API_KEY"], http_client=http_client, max_retries=0)
    an = anthropic.AsyncAnthropic(
        api_key=KEYS["ANTHROPIC_API_KEY"], http_client=http_client, max_retries=0
    )
    said = [{"role": "user", "content": "hello"}]
    streamed = [{"role": "user", "content": "stream on"}]
    reply = await oa.chat.completions.create(model="gpt-4o-mini", messages=said)  # type: ignore[arg-type]
    chunks = await oa.chat.completions.create(
        model="gpt-4o-mini",
        messages=streamed,  # type: ignore[arg-type]
        stream=True,
    )
    text = "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])
    message = await an.messages.create(model="claude-x", max_tokens=64, messages=said)  # type: ignore[arg-type]
    async with an.messages.stream(model="claude-x", max_tokens=64, messages=streamed) as events:  # type: ignore[arg-type]
        told = "".join([t async for t in events.text_stream])
    await oa.close()
    await an.close()
    return [reply.choices[0].message.content or "", text, message.content[0].text, told]  # type: ignore[union-attr]


def stub_upstreams(stub: StubUpstream) -> dict[str, str]:
    return {"openai": stub.openai_url, "anthropic": stub.anthropic_url}


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """Both SDKs' plain and streamed calls, recorded through the transport (sync)."""
    path = tmp_path / "sdk.json"
    with run_stub() as stub:
        with ReplayTransport(path, mode="record", upstreams=stub_upstreams(stub)) as t:
            with httpx2.Client(transport=t) as client:
                assert sdk_calls(client) == EXPECTED
        assert len(stub.received) == 4
    assert t.summary is not None and (t.summary.live, t.summary.misses) == (4, [])
    providers = [i["provider"] for i in json.loads(path.read_text())["interactions"]]
    assert providers == ["openai", "openai", "anthropic", "anthropic"]
    assert KEYS["OPENAI_API_KEY"] not in path.read_text()
    return path


def test_sdks_record_then_replay_strictly_with_sockets_forbidden(
    recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forbid_sockets(monkeypatch)
    with ReplayTransport(recorded, mode="strict") as t:
        with httpx2.Client(transport=t) as client:
            assert sdk_calls(client) == EXPECTED
    assert t.summary is not None
    assert (t.summary.replayed, t.summary.live, t.summary.misses) == (4, 0, [])


async def test_async_sdks_record_then_replay_strictly_with_sockets_forbidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "async.json"
    with run_stub() as stub:
        async with AsyncReplayTransport(path, mode="record", upstreams=stub_upstreams(stub)) as t:
            async with httpx2.AsyncClient(transport=t) as client:
                assert await async_sdk_calls(client) == EXPECTED
        assert len(stub.received) == 4
    assert t.summary is not None and t.summary.live == 4
    forbid_sockets(monkeypatch)
    async with AsyncReplayTransport(path, mode="strict") as replaying:
        async with httpx2.AsyncClient(transport=replaying) as client:
            assert await async_sdk_calls(client) == EXPECTED
    assert replaying.summary is not None
    assert (replaying.summary.replayed, replaying.summary.misses) == (4, [])


async def test_replays_change_form_and_keep_the_recorded_pace_when_asked(
    recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forbid_sockets(monkeypatch)
    async with AsyncReplayTransport(recorded, mode="strict", timing="recorded") as t:
        async with httpx2.AsyncClient(transport=t) as client:
            oa = openai.AsyncOpenAI(api_key="sk-x", http_client=client, max_retries=0)
            chunks = await oa.chat.completions.create(  # recorded plain, asked as a stream
                model="gpt-4o-mini", messages=[reply_to("hello")], stream=True
            )
            texts = [c.choices[0].delta.content or "" async for c in chunks if c.choices]
            paced = await oa.chat.completions.create(  # recorded as a stream, paced
                model="gpt-4o-mini", messages=[reply_to("stream on")], stream=True
            )
            told = [c.choices[0].delta.content or "" async for c in paced if c.choices]
    assert "".join(texts) == "stub reply to: hello" and len(texts) > 1
    assert "".join(told) == "stub reply to: stream on"
    assert t.summary is not None and t.summary.replayed == 2


def test_an_httpx_client_replays_through_the_same_transport(
    recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forbid_sockets(monkeypatch)
    with ReplayTransport(recorded, mode="strict") as t:
        with httpx.Client(transport=t) as client:  # the earlier SDKs' library
            oa = openai.OpenAI(api_key="sk-test-other-1111", http_client=client, max_retries=0)
            reply = oa.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}]
            )
            answer = client.post(  # a plain client, by the provider's host and path
                "https://api.anthropic.com/v1/messages",
                headers={"x-api-key": "sk-ant-other", "anthropic-version": "2023-06-01"},
                json={"model": "claude-x", "max_tokens": 64, "messages": [reply_to("hello")]},
            )
    assert reply.choices[0].message.content == "stub reply to: hello"
    assert answer.status_code == 200
    assert answer.headers["x-otel-replay"] == "replayed"
    assert answer.json()["content"][0]["text"] == "stub reply to: hello"


def reply_to(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def test_a_changed_prompt_gets_the_providers_error_unretried_then_replay_miss(
    recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forbid_sockets(monkeypatch)
    with pytest.raises(ReplayMiss, match=r"replay miss: messages changed"):
        with ReplayTransport(recorded, mode="strict") as t:
            client = httpx2.Client(transport=t)
            oa = openai.OpenAI(api_key=KEYS["OPENAI_API_KEY"], http_client=client)  # retries on
            an = anthropic.Anthropic(api_key=KEYS["ANTHROPIC_API_KEY"], http_client=client)
            with pytest.raises(openai.BadRequestError) as oa_error:
                oa.chat.completions.create(model="gpt-4o-mini", messages=[reply_to("changed")])
            with pytest.raises(anthropic.BadRequestError) as an_error:
                an.messages.create(model="claude-x", max_tokens=64, messages=[reply_to("other")])
    for error in (oa_error.value, an_error.value):
        assert error.response.headers["x-should-retry"] == "false"
        assert error.response.headers["x-otel-replay"] == "miss"
        assert "replay miss: messages changed" in str(error)
    assert an_error.value.body["type"] == "error"  # type: ignore[index]  # Anthropic's form
    assert t.summary is not None and len(t.summary.misses) == 2  # each asked once: no retry
    assert recorded.with_suffix(".misses.json").exists()


def test_auto_mode_sends_a_miss_with_the_callers_key_live_and_appends_it(
    recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEYS["OPENAI_API_KEY"])
    with run_stub() as stub:
        with ReplayTransport(recorded, mode="auto", upstreams=stub_upstreams(stub)) as t:
            oa = openai.OpenAI(http_client=httpx2.Client(transport=t), max_retries=0)
            asked = [
                oa.chat.completions.create(model="gpt-4o-mini", messages=[reply_to(text)])
                for text in ("hello", "something new")
            ]
        assert len(stub.received) == 1  # the recorded call was replayed
    assert [a.choices[0].message.content for a in asked] == [
        "stub reply to: hello",
        "stub reply to: something new",
    ]
    assert t.summary is not None and (t.summary.replayed, t.summary.live) == (1, 1)
    assert len(json.loads(recorded.read_text())["interactions"]) == 5


def test_an_upstream_fault_is_recorded_and_replays_as_the_same_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "fault.json"
    with run_stub() as stub:
        stub.enqueue(Fault("reset_mid_stream", after_events=2))
        with ReplayTransport(path, mode="record", upstreams=stub_upstreams(stub)) as t:
            oa = openai.OpenAI(
                api_key=KEYS["OPENAI_API_KEY"],
                http_client=httpx2.Client(transport=t),
                max_retries=0,
            )
            with pytest.raises(openai.APIConnectionError):
                chunks = oa.chat.completions.create(
                    model="gpt-4o-mini", messages=[reply_to("cut short")], stream=True
                )
                for _ in chunks:
                    pass
    response = json.loads(path.read_text())["interactions"][0]["response"]
    assert response["fault"] == "reset_mid_stream"
    forbid_sockets(monkeypatch)
    with ReplayTransport(path, mode="strict") as t:
        oa = openai.OpenAI(api_key="sk-x", http_client=httpx2.Client(transport=t), max_retries=0)
        seen = []
        with pytest.raises(openai.APIConnectionError):
            chunks = oa.chat.completions.create(
                model="gpt-4o-mini", messages=[reply_to("cut short")], stream=True
            )
            seen.extend(c.choices[0].delta.content for c in chunks if c.choices)
    assert t.summary is not None and t.summary.replayed == 1


def test_replayed_spans_are_written_as_the_gateway_writes_them(
    recorded: Path, tmp_path: Path
) -> None:
    by_gateway, by_transport = tmp_path / "gateway.jsonl", tmp_path / "transport.jsonl"
    with replay(recorded, mode="strict", traces=by_gateway) as gw:
        with httpx2.Client() as client:
            oa = openai.OpenAI(api_key="x", base_url=f"{gw.url}/v1", http_client=client)
            oa.chat.completions.create(model="gpt-4o-mini", messages=[reply_to("hello")])
    with ReplayTransport(recorded, mode="strict", traces=by_transport) as t:
        oa = openai.OpenAI(api_key="x", http_client=httpx2.Client(transport=t))
        oa.chat.completions.create(model="gpt-4o-mini", messages=[reply_to("hello")])
    gateway_spans, transport_spans = spans(by_gateway), spans(by_transport)
    assert len(gateway_spans) == len(transport_spans) == 1
    assert transport_spans[0]["name"] == gateway_spans[0]["name"] == "chat gpt-4o-mini"
    assert transport_spans[0]["attributes"] == gateway_spans[0]["attributes"]


def spans(path: Path) -> list[dict[str, Any]]:
    found = []
    for line in path.read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    span["attributes"] = sorted(
                        (a["key"], json.dumps(a["value"]))
                        for a in span["attributes"]
                        if a["key"] not in ("otel_replay.duration_ms",)
                    )
                    found.append(span)
    return found


def test_a_python_api_blocks_transport_records_and_replays_in_the_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "block.json"
    monkeypatch.setenv("OPENAI_API_KEY", KEYS["OPENAI_API_KEY"])
    with run_stub() as stub, record(path, upstream_openai=stub.openai_url) as run:
        # the SDK reads the block's OPENAI_BASE_URL: the gateway's URL, answered in process
        oa = openai.OpenAI(http_client=httpx2.Client(transport=run.transport), max_retries=0)
        said = oa.chat.completions.create(model="gpt-4o-mini", messages=[reply_to("hello")])
        assert len(stub.received) == 1
    assert said.choices[0].message.content == "stub reply to: hello"
    assert run.summary is not None and run.summary.live == 1
    with replay(path, mode="strict") as run, pytest.MonkeyPatch.context() as no_sockets:
        forbid_sockets(no_sockets)  # the block's gateway is up: nothing opens one from here
        oa = openai.OpenAI(http_client=httpx2.Client(transport=run.transport), max_retries=0)
        again = oa.chat.completions.create(model="gpt-4o-mini", messages=[reply_to("hello")])
    assert again.choices[0].message.content == "stub reply to: hello"
    assert run.summary is not None and (run.summary.replayed, run.summary.misses) == (1, [])


def test_the_pytest_blocks_transports(
    pytester: pytest.Pytester, recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassettes = pytester.path / "cassettes"
    cassettes.mkdir()
    (cassettes / "sdk.json").write_bytes(recorded.read_bytes())
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        test_block=textwrap.dedent(
            """
            import socket
            import httpx2, openai, pytest

            def ask(client, text):
                oa = openai.OpenAI(api_key="sk-block", http_client=client, max_retries=0)
                reply = oa.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": text}]
                )
                return reply.choices[0].message.content

            def test_in_process(otel_replay, monkeypatch):
                monkeypatch.setattr(socket, "create_connection", None)
                with otel_replay("sdk") as run:
                    with httpx2.Client(transport=run.transport) as client:
                        assert ask(client, "hello") == "stub reply to: hello"
                assert run.summary.replayed == 1

            @pytest.mark.asyncio
            async def test_in_process_async(otel_replay):
                with otel_replay("sdk") as run:
                    async with httpx2.AsyncClient(transport=run.async_transport) as client:
                        oa = openai.AsyncOpenAI(api_key="sk-block", http_client=client)
                        chunks = await oa.chat.completions.create(
                            model="gpt-4o-mini",
                            messages=[{"role": "user", "content": "stream on"}],
                            stream=True,
                        )
                        text = "".join(
                            [c.choices[0].delta.content or "" async for c in chunks if c.choices]
                        )
                assert text == "stub reply to: stream on"

            def test_a_miss(otel_replay):
                with otel_replay("sdk") as run:
                    with httpx2.Client(transport=run.transport) as client:
                        with pytest.raises(openai.BadRequestError):
                            ask(client, "changed")
            """
        )
    )
    result = pytester.runpytest_inprocess("-p", "no:hypothesispytest", "--otel-replay=strict")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_a_miss*replay miss: messages changed*"])
