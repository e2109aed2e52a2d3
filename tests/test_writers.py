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
