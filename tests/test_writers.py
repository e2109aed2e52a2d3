"""The gateway's writers: a recorded answer's bytes are made once, whatever the cassette's
size."""

from __future__ import annotations

import json

import pytest

from otel_replay.gateway import writers


def test_every_answer_of_a_large_cassette_is_encoded_once(monkeypatch: pytest.MonkeyPatch):
    made: list[object] = []

    def compact(body):  # type: ignore[no-untyped-def]
        made.append(body)
        return json.dumps(body, separators=(",", ":")).encode()

    monkeypatch.setattr(writers._encoded, "fn", compact)
    writers._encoded.clear()
    answers = [{"id": f"chatcmpl-{i}", "choices": []} for i in range(6000)]  # many, short
    writers.prime_answers(answers)
    assert len(made) == len(answers)
    for answer in (answers[0], answers[-1], answers[0]):  # replayed: nothing encoded again
        response = writers.body_response(200, {}, answer)
        assert response.body == json.dumps(answer, separators=(",", ":")).encode()
    assert len(made) == len(answers)
    writers._encoded.clear()


def test_recorded_streams_are_encoded_once_before_the_first_request(
    monkeypatch: pytest.MonkeyPatch,
):
    """A recording's stream is encoded when the gateway starts; replaying it encodes
    nothing, and the bytes are the stream's own. Bedrock's binary streams wait for
    their first replay (another codec)."""
    from otel_replay.core.exchange import CanonicalRequest, Exchange, Response, SSEEvent
    from otel_replay.gateway import playback
    from otel_replay.streams.codec import encode_all
    from otel_replay.streams.sse import SSE

    made: list[object] = []

    def counted(codec, events):  # type: ignore[no-untyped-def]
        made.append(events)
        return encode_all(codec, events)

    monkeypatch.setattr(playback, "encode_all", counted)
    monkeypatch.setattr(playback, "_ENCODED", {})

    def recording(provider: str, n: int) -> Exchange:
        events = [SSEEvent(event="delta", data=json.dumps({"n": n, "k": k})) for k in range(3)]
        return Exchange(
            provider=provider,
            operation="chat",
            request=CanonicalRequest("/v1/chat/completions"),
            response=Response(status=200, events=events),
        )

    recorded = [recording("openai", 1), recording("aws.bedrock", 2), recording("anthropic", 3)]
    playback.prime_streams(recorded)
    assert made == [recorded[0].response.events, recorded[2].response.events]
    for exchange in (recorded[2], recorded[0]):
        events = exchange.response.events
        assert events is not None
        assert playback._encoded(SSE, events) == encode_all(SSE, events)
    assert len(made) == 2
