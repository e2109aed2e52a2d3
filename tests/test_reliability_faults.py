"""Upstream faults reach the agent as the same exception it gets without otel-replay, are
recorded, and replay identically with the upstream stopped.

Every case runs the official SDK three times: directly against the stub, through the
gateway in record mode, and through the gateway in strict replay once the stub is gone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from otel_replay.cassette.model import load
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.testing.stub import Fault, StubUpstream, run_stub

OPENAI_KEY = "sk-test-faults-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-api03-" + "f" * 90
CLIENT_TIMEOUT = 0.5

FAULTS: dict[str, Fault] = {
    "500": Fault("status", status=500),
    "503-retry-after": Fault("status", status=503, headers={"retry-after": "7"}),
    "429": Fault(
        "status",
        status=429,
        headers={"retry-after": "1"},
        body={"error": {"message": "slow down", "type": "rate_limit_error"}},
    ),
    "timeout": Fault("hang"),
    "reset": Fault("reset"),
    "reset-mid-stream": Fault("reset_mid_stream", after_events=2),
    "malformed": Fault("malformed"),
}


def _call(provider: str, base: str, stream: bool, retries: int = 0) -> Any:
    """One model call with the official SDK; returns the text or the exception type.
    Clients and streams are closed whatever happens, so nothing is left for the GC."""
    try:
        if provider == "openai":
            with openai.OpenAI(
                base_url=base, api_key=OPENAI_KEY, max_retries=retries, timeout=CLIENT_TIMEOUT
            ) as oc:
                messages = [{"role": "user", "content": "fault please"}]
                if stream:
                    with oc.chat.completions.create(
                        model="gpt-4o-mini", messages=messages, stream=True
                    ) as chunks:
                        return "".join(
                            c.choices[0].delta.content or "" for c in chunks if c.choices
                        )
                reply = oc.chat.completions.create(model="gpt-4o-mini", messages=messages)
                return reply.choices[0].message.content
        with anthropic.Anthropic(
            base_url=base, api_key=ANTHROPIC_KEY, max_retries=retries, timeout=CLIENT_TIMEOUT
        ) as ac:
            kwargs: dict[str, Any] = {
                "model": "claude-haiku-4-5",
                "max_tokens": 64,
                "messages": [{"role": "user", "content": "fault please"}],
            }
            if stream:
                with ac.messages.stream(**kwargs) as s:
                    return "".join(s.text_stream)
            return ac.messages.create(**kwargs).content[0].text  # type: ignore[union-attr]
    except Exception as exc:  # the type is the observable
        return type(exc)


def _base(provider: str, env_or_stub: Any) -> str:
    if isinstance(env_or_stub, StubUpstream):
        return env_or_stub.openai_url if provider == "openai" else env_or_stub.anthropic_url
    return env_or_stub["OPENAI_BASE_URL" if provider == "openai" else "ANTHROPIC_BASE_URL"]


def _gateway(mode: str, cassette: Path, stub: StubUpstream | None = None) -> GatewayThread:
    return GatewayThread(
        GatewayConfig(
            mode=mode,
            cassette=cassette,
            grpc_port=None,
            upstream_openai=stub.openai_url if stub else "http://127.0.0.1:9/v1",
            upstream_anthropic=stub.anthropic_url if stub else "http://127.0.0.1:9",
            environ={"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY},
        )
    )


CASES = [
    (provider, name, stream)
    for provider in ("openai", "anthropic")
    for name in FAULTS
    for stream in ((True,) if name == "reset-mid-stream" else (False, True))
    if not (name == "timeout" and stream)  # one hang per provider keeps the file fast
]


@pytest.fixture(scope="module")
def short_replayed_hang() -> Any:
    """A replayed timeout hangs far longer than any client waits; shortened here only so
    the gateway's own shutdown does not wait on it."""
    from otel_replay.gateway import playback

    saved = playback.REPLAYED_HANG_SECONDS
    playback.REPLAYED_HANG_SECONDS = 5.0
    yield
    playback.REPLAYED_HANG_SECONDS = saved


@pytest.mark.parametrize(
    ("provider", "name", "stream"),
    CASES,
    ids=[f"{p}-{n}-{'stream' if s else 'plain'}" for p, n, s in CASES],
)
def test_fault_is_the_same_directly_recorded_and_replayed(
    tmp_path: Path,
    provider: str,
    name: str,
    stream: bool,
    short_replayed_hang: Any,
) -> None:
    cassette = tmp_path / "c.json"
    fault = FAULTS[name]
    with run_stub() as stub:
        stub.enqueue(Fault(**{f: getattr(fault, f) for f in fault.__slots__}))  # type: ignore[attr-defined]
        direct = _call(provider, _base(provider, stub), stream)
        if not (name == "malformed" and stream):  # a stream of no events is just empty
            assert isinstance(direct, type) and issubclass(direct, Exception), direct
        stub.enqueue(Fault(**{f: getattr(fault, f) for f in fault.__slots__}))  # type: ignore[attr-defined]
        with _gateway("record", cassette, stub) as gw:
            recorded = _call(provider, _base(provider, gw.env), stream)
        assert recorded == direct, f"direct {direct}, through the gateway {recorded}"
    interactions = load(cassette).interactions
    assert len(interactions) == 1
    response = interactions[0].response
    if name in ("500", "503-retry-after", "429"):
        assert response.status == fault.status and response.fault is None
    if name == "503-retry-after":
        assert response.headers.get("retry-after") == "7"
    if name in ("timeout", "reset", "reset-mid-stream"):
        assert response.fault == name.replace("-", "_")
    with _gateway("strict", cassette) as gw:
        replayed = _call(provider, _base(provider, gw.env), stream)
        summary = gw.stop()
    assert replayed == direct, f"direct {direct}, replayed {replayed}"
    assert summary.replayed == 1 and summary.misses == []


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_sdk_retry_after_a_503_records_both_attempts_and_replays_them(
    tmp_path: Path, provider: str
) -> None:
    cassette = tmp_path / "c.json"
    with run_stub() as stub:
        stub.enqueue(Fault("status", status=503, headers={"retry-after": "0"}))
        direct = _call(provider, _base(provider, stub), False, retries=1)
        assert direct == "stub reply to: fault please"
        stub.enqueue(Fault("status", status=503, headers={"retry-after": "0"}))
        with _gateway("record", cassette, stub) as gw:
            assert _call(provider, _base(provider, gw.env), False, retries=1) == direct
    statuses = [ex.response.status for ex in load(cassette).interactions]
    assert statuses == [503, 200]
    with _gateway("strict", cassette) as gw:
        assert _call(provider, _base(provider, gw.env), False, retries=1) == direct
        summary = gw.stop()
    assert summary.replayed == 2 and summary.misses == []
