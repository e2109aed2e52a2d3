"""Stream codecs: encoding, then decoding in arbitrary chunks, gives the same events."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.core.exchange import SSEEvent
from otel_replay.streams.codec import StreamCodec, decode_all, encode_all
from otel_replay.streams.sse import SSE

CODECS: list[StreamCodec] = [SSE]

# SSE data is text lines: no CR (a line end of its own); names are single-line tokens
data = st.text(st.characters(codec="utf-8", exclude_characters="\r"), max_size=40)
names = st.none() | st.text(
    st.characters(codec="utf-8", exclude_characters="\r\n:"), min_size=1, max_size=12
).filter(lambda name: not name.startswith(" "))
events = st.lists(st.builds(SSEEvent, data=data, event=names), max_size=8)


def _chunks(payload: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(payload) + 1) for cut in cuts})
    bounds = [0, *points, len(payload)]
    return [payload[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=100, deadline=None)
@given(events, st.lists(st.integers(min_value=0), max_size=12))
def test_encode_then_incremental_decode_is_lossless(recorded, cuts):
    for codec in CODECS:
        payload = encode_all(codec, recorded)
        decoder = codec.decoder()
        decoded: list[SSEEvent] = []
        for i, chunk in enumerate(_chunks(payload, cuts)):
            decoded.extend(decoder.feed(chunk, float(i)))
        decoded.extend(decoder.close(99.0))
        expected = [(e.data, e.event) for e in recorded]
        assert [(e.data, e.event) for e in decoded] == expected
        assert [(e.data, e.event) for e in decode_all(codec, payload)] == expected
        times = [e.t for e in decoded]
        assert times == sorted(times)


def test_decoded_events_carry_the_time_of_the_chunk_that_completed_them():
    decoder = SSE.decoder()
    assert decoder.feed(b"data: a\n", 0.5) == []
    (event,) = decoder.feed(b"\nevent: e\ndata: b", 1.5)
    assert (event.data, event.t) == ("a", 1.5)
    (last,) = decoder.close(2.0)
    assert (last.data, last.event, last.t) == ("b", "e", 2.0)


def test_sse_declares_its_content_type():
    assert SSE.name == "sse"
    assert SSE.is_stream(SSE.content_type)
    assert SSE.is_stream("text/event-stream")
    assert not SSE.is_stream("application/json")
    assert encode_all(SSE, [SSEEvent(data="x")]) == b"data: x\n\n"
