"""Coverage-guided fuzzing of otel-replay's decoders with atheris, for long runs outside
``make test`` (which runs the hypothesis properties in tests/test_reliability_input.py).

Each input's first byte picks a target; the rest is the payload:

- OTLP protobuf and OTLP JSON trace decoding (only TraceFormatError may escape),
- the SSE parser fed in arbitrary pieces (nothing may escape; splits must not matter),
- cassette loading (only CassetteError may escape).

Run::

    .venv/bin/pip install atheris
    .venv/bin/python fuzz/fuzz_decoders.py -max_total_time=600 fuzz/corpus

Any other exception is a crash: atheris stops and writes the input to ``crash-*``.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from otel_replay.cassette.model import dumps, loads
    from otel_replay.core.errors import CassetteError, TraceFormatError
    from otel_replay.otlp import codec
    from otel_replay.streams.sse import SSEParser, parse_all


def _proto(data: bytes) -> None:
    try:
        msg = codec.traces_from_proto(data)
    except TraceFormatError:
        return
    codec.drop_invalid_spans(msg)
    codec.to_json(msg)


def _json(data: bytes) -> None:
    try:
        codec.traces_from_json(data)
    except TraceFormatError:
        pass


def _sse(data: bytes) -> None:
    if not data:
        return
    cut = data[0] % (len(data) + 1)
    payload = data[1:]
    parser = SSEParser()
    events = parser.feed(payload[:cut]) + parser.feed(payload[cut:]) + parser.close()
    whole = parse_all(payload)
    assert [(e.event, e.data) for e in events] == [(e.event, e.data) for e in whole]


def _cassette(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    try:
        cassette = loads(text, "fuzz.json")
    except CassetteError:
        return
    again = loads(dumps(cassette), "fuzz.json")
    assert again.interactions == cassette.interactions


TARGETS = (_proto, _json, _sse, _cassette)


def test_one_input(data: bytes) -> None:
    if not data:
        return
    TARGETS[data[0] % len(TARGETS)](data[1:])


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
