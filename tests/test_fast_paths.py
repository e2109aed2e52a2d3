"""The hot-path shortcuts give exactly what the general code gives.

Direct OTLP trace JSON encoding and decoding against ``json_format``; the indexed dedupe
window against the plain scan it replaced; the trace store's prefilter shortcut against the
redactor's walk; the cassette's pretty printer against ``json.dumps``.
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from test_cassette import layout

from otel_replay.cassette import model as cassette_mod
from otel_replay.cassette.model import Cassette, dumps, loads
from otel_replay.core import jsontext
from otel_replay.core.errors import TraceFormatError
from otel_replay.core.exchange import CanonicalRequest, Exchange, Response, SSEEvent
from otel_replay.core.jsontext import LineItems, finite, pretty
from otel_replay.otlp import codec, tracejson, tracejson_decode
from otel_replay.otlp.store import TraceStore
from otel_replay.readers.window import Links as _Links
from otel_replay.readers.window import Window as _Window
from otel_replay.readers.window import keep
from otel_replay.redaction.redact import Redactor
from otel_replay.spans.encode import exchange_to_span, export_request

# --- strategies ----------------------------------------------------------------------------

ids16 = st.one_of(st.just(b""), st.binary(min_size=16, max_size=16))
ids8 = st.one_of(st.just(b""), st.binary(min_size=8, max_size=8))
u32 = st.integers(0, 2**32 - 1)
u64 = st.integers(0, 2**64 - 1)
text = st.text(max_size=12)


def _any_value(children: st.SearchStrategy[AnyValue]) -> st.SearchStrategy[AnyValue]:
    return st.one_of(
        st.builds(lambda v: AnyValue(array_value={"values": v}), st.lists(children, max_size=3)),
        st.builds(
            lambda kvs: AnyValue(kvlist_value={"values": kvs}),
            st.lists(st.builds(KeyValue, key=text, value=children), max_size=3),
        ),
    )


scalar_values = st.one_of(
    st.just(AnyValue()),
    st.builds(AnyValue, string_value=text),
    st.builds(AnyValue, bool_value=st.booleans()),
    st.builds(AnyValue, int_value=st.integers(-(2**63), 2**63 - 1)),
    st.builds(AnyValue, double_value=st.floats()),
    st.builds(AnyValue, bytes_value=st.binary(max_size=8)),
)
any_values = st.recursive(scalar_values, _any_value, max_leaves=6)


@st.composite
def key_values(draw: st.DrawFn) -> KeyValue:
    kv = KeyValue(key=draw(text))
    if draw(st.booleans()):
        kv.value.CopyFrom(draw(any_values))
    return kv


attributes = st.lists(key_values(), max_size=4)


@st.composite
def spans(draw: st.DrawFn) -> Span:
    span = Span(
        trace_id=draw(ids16),
        span_id=draw(ids8),
        parent_span_id=draw(ids8),
        trace_state=draw(text),
        name=draw(text),
        kind=draw(st.integers(0, 5)),
        start_time_unix_nano=draw(u64),
        end_time_unix_nano=draw(u64),
        attributes=draw(attributes),
        dropped_attributes_count=draw(u32),
        dropped_events_count=draw(u32),
        dropped_links_count=draw(u32),
        flags=draw(u32),
    )
    for _ in range(draw(st.integers(0, 2))):
        event = span.events.add(time_unix_nano=draw(u64), name=draw(text))
        event.attributes.extend(draw(attributes))
        event.dropped_attributes_count = draw(u32)
    for _ in range(draw(st.integers(0, 2))):
        link = span.links.add(trace_id=draw(ids16), span_id=draw(ids8))
        link.trace_state = draw(text)
        link.attributes.extend(draw(attributes))
        link.flags = draw(u32)
    if draw(st.booleans()):
        span.status.SetInParent()
        span.status.message = draw(text)
        span.status.code = draw(st.integers(0, 2))  # type: ignore[assignment]
    return span


@st.composite
def requests(draw: st.DrawFn) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    for _ in range(draw(st.integers(0, 2))):
        rs = request.resource_spans.add(schema_url=draw(text))
        if draw(st.booleans()):
            rs.resource.SetInParent()
            rs.resource.attributes.extend(draw(attributes))
            rs.resource.dropped_attributes_count = draw(u32)
        for _ in range(draw(st.integers(0, 2))):
            ss = rs.scope_spans.add(schema_url=draw(text))
            if draw(st.booleans()):
                ss.scope.SetInParent()
                ss.scope.name, ss.scope.version = draw(text), draw(text)
                ss.scope.attributes.extend(draw(attributes))
            ss.spans.extend(draw(st.lists(spans(), max_size=3)))
    return request


def _reference_json(msg: ExportTraceServiceRequest) -> dict[str, Any]:
    doc: dict[str, Any] = json_format.MessageToDict(msg, use_integers_for_enums=True)
    codec._walk_traces(doc, codec._b64_to_hex, False)
    return doc


def _reference_parse(doc: dict[str, Any]) -> ExportTraceServiceRequest:
    codec._walk_traces(doc, codec._id_to_b64, True)
    return json_format.ParseDict(doc, ExportTraceServiceRequest(), ignore_unknown_fields=True)


def _wire(msg: ExportTraceServiceRequest) -> bytes:
    return msg.SerializeToString(deterministic=True)


# --- encoder -------------------------------------------------------------------------------


def test_direct_codec_applies_to_this_opentelemetry_proto() -> None:
    assert tracejson.DIRECT


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_direct_encoder_writes_the_same_line_as_message_to_dict(
    msg: ExportTraceServiceRequest,
) -> None:
    assert jsontext.dumps_line(codec.to_json(msg)) == jsontext.dumps_line(_reference_json(msg))


@settings(max_examples=50, deadline=None)
@given(spans())
def test_direct_span_encoder_matches(span: Span) -> None:
    reference: dict[str, Any] = json_format.MessageToDict(span, use_integers_for_enums=True)
    codec._walk_span(reference, codec._b64_to_hex, False)
    assert jsontext.dumps_line(tracejson.span_json(span)) == jsontext.dumps_line(reference)


# --- decoder -------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests(), st.booleans())
def test_direct_decoder_is_lossless_and_matches_parse_dict(
    msg: ExportTraceServiceRequest, numbers: bool
) -> None:
    line = jsontext.dumps_line(_reference_json(msg))
    if numbers:  # 64-bit integers may be written as JSON numbers too
        line = re.sub(r'(Nano|intValue)":"(-?[0-9]+)"', r'\1":\2', line)
    reference = _reference_parse(json.loads(line))
    decoded = codec.traces_from_json(line)
    assert _wire(decoded) == _wire(reference)
    finite = all(
        not (isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity")) for v in _strings(line)
    )
    if finite and '"bytesValue"' not in line:
        assert tracejson_decode.traces_from_doc(json.loads(line)) is not None


def _strings(line: str) -> Iterator[Any]:
    stack: list[Any] = [json.loads(line)]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        else:
            yield item


UNUSUAL = [
    {"resource_spans": [{"scope_spans": [{"spans": [{"trace_id": "ab" * 16, "name": "s"}]}]}]},
    {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "q83vEjRWeJCrze8SNFZ4kA=="}]}]}]},
    {"resourceSpans": [{"scopeSpans": [{"spans": [{"kind": "SPAN_KIND_CLIENT"}]}]}]},
    {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "s", "extra": 1}]}]}]},
    {"resourceSpans": [{"resource": None}]},
    {"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": 5.0}]}]}]},
    {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {"spans": [{"attributes": [{"key": "b", "value": {"bytesValue": "AQ=="}}]}]}
                ]
            }
        ]
    },
]


@pytest.mark.parametrize("doc", UNUSUAL)
def test_unusual_forms_fall_back_to_parse_dict(doc: dict[str, Any]) -> None:
    assert tracejson_decode.traces_from_doc(json.loads(json.dumps(doc))) is None
    decoded = codec.traces_from_json(json.dumps(doc))
    assert _wire(decoded) == _wire(_reference_parse(json.loads(json.dumps(doc))))


BAD = [
    {"resourceSpans": "x"},
    {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]},
    {"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "-1"}]}]}]},
    {"resourceSpans": [{"scopeSpans": [{"spans": [{"kind": 2**40}]}]}]},
    {"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"value": {"x": 1}}]}]}]}]},
    {"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"key": 3}]}]}]}]},
    {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "s"}]}]}], "other": 1},
]


@pytest.mark.parametrize("doc", BAD)
def test_bad_input_is_still_a_trace_format_error_or_ignored_as_before(doc: Any) -> None:
    try:
        expected: bytes | type[TraceFormatError] = _wire(
            _reference_parse(json.loads(json.dumps(doc)))
        )
    except (json_format.Error, ValueError, TypeError):
        expected = TraceFormatError
    if expected is TraceFormatError:
        with pytest.raises(TraceFormatError):
            codec.traces_from_json(json.dumps(doc))
    else:
        assert _wire(codec.traces_from_json(json.dumps(doc))) == expected


def test_nan_literal_is_refused_as_before() -> None:
    attribute = '{"key":"k","value":{"doubleValue":NaN}}'
    line = '{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":[ATTR]}]}]}]}'
    line = line.replace("ATTR", attribute)
    with pytest.raises(TraceFormatError):
        codec.traces_from_json(line)


# --- dedupe window -------------------------------------------------------------------------


class _ScanWindow(_Window):
    """The window as it was: every release compares the earliest with every pending one."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.plain: list[Exchange] = []

    def add(self, exchange: Exchange) -> Iterator[Exchange]:
        self.plain.append(exchange)
        if len(self.plain) > self.size:
            yield from self._release_plain()

    def flush(self) -> Iterator[Exchange]:
        while self.plain:
            yield from self._release_plain()

    def _release_plain(self) -> list[Exchange]:
        first = min(self.plain, key=lambda e: e.start_ns)
        group = [e for e in self.plain if e is first or self._same_call(first, e)]
        self.plain = [e for e in self.plain if not any(e is g for g in group)]
        return keep(group)


@st.composite
def exchange_lists(draw: st.DrawFn) -> tuple[list[Exchange], list[tuple[str, str]]]:
    count = draw(st.integers(1, 30))
    traces = ["a" * 32, "b" * 32, None]
    spans_ = [f"{i:016x}" for i in range(12)]
    out = []
    for _ in range(count):
        start = draw(st.integers(0, 40))
        messages = [{"role": "user", "parts": [{"content": draw(st.sampled_from("xy"))}]}]
        out.append(
            Exchange(
                provider="openai",
                operation=draw(st.sampled_from(["chat", "chat", "embeddings"])),
                request=CanonicalRequest(
                    "/v1/chat/completions",
                    model=draw(st.sampled_from(["m", "n", None])),
                    messages=messages,
                ),
                response=Response(status=200),
                raw_request=draw(st.sampled_from([None, {"a": 1}])),
                start_ns=start,
                end_ns=start + draw(st.integers(-2, 10)),
                trace_id=draw(st.sampled_from(traces)),
                span_id=draw(st.sampled_from(spans_)),
                parent_span_id=draw(st.sampled_from([*spans_, None])),
                source=draw(st.sampled_from(["otel-replay", "semconv", "openinference"])),
            )
        )
    links = draw(st.lists(st.tuples(st.sampled_from(spans_), st.sampled_from(spans_))))
    return out, links


@settings(max_examples=100, deadline=None)
@given(exchange_lists(), st.integers(1, 8))
def test_indexed_window_releases_what_the_scan_released(
    case: tuple[list[Exchange], list[tuple[str, str]]], size: int
) -> None:
    exchanges, links = case
    fast, slow = _Window(size), _ScanWindow(size)
    for window in (fast, slow):
        window.links = _Links(exchanges=10**9, spans=10**9, limit=10**9)  # none dropped
        for child, parent in links:
            window.links.add(bytes.fromhex(child), bytes.fromhex(parent))
    got = [e for ex in exchanges for e in fast.add(ex)] + list(fast.flush())
    want = [e for ex in exchanges for e in slow.add(ex)] + list(slow.flush())
    assert [id(e) for e in got] == [id(e) for e in want]
    assert not fast.pending and not fast._by_start and not fast._by_trace and not fast._sources


# --- trace store shortcut ------------------------------------------------------------------


def _own_request(raw: Any) -> ExportTraceServiceRequest:
    ex = Exchange(
        provider="openai",
        operation="chat",
        request=CanonicalRequest("/v1/chat/completions", model="m"),
        response=Response(status=200, body={"ok": True}),
        raw_request=raw,
        trace_id="ab" * 16,
        span_id="cd" * 8,
        start_ns=1,
        end_ns=2,
    )
    return export_request([exchange_to_span(ex)])


@pytest.mark.parametrize(
    "raw",
    [
        {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        # The redactor's walk cannot see a key and its value together; the JSON text of the
        # body attribute shows them side by side, and the store must still catch it.
        {"model": "m", "aws_secret_access_key": "A" * 40},
        {"model": "m", "note": "key sk-proj-" + "a" * 40},
    ],
)
def test_text_redacted_write_equals_the_walked_write(tmp_path: Any, raw: Any) -> None:
    redactor = Redactor()
    plain = TraceStore(tmp_path / "a.jsonl", redact=redactor.json)
    screened = TraceStore(tmp_path / "b.jsonl", redact=redactor.json, redact_text=redactor.text)
    with plain, screened:
        plain.write_traces(_own_request(raw), received=False)
        screened.write_traces(_own_request(raw), received=False)
    written = (tmp_path / "b.jsonl").read_text()
    assert written == (tmp_path / "a.jsonl").read_text()
    assert "A" * 40 not in written and "sk-proj-" not in written


def _received_batch(texts: list[str]) -> ExportTraceServiceRequest:
    """A third-party span carrying ``texts`` as attribute values, keys and array items."""
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="llm")
    for i, text in enumerate(texts):
        span.attributes.append(KeyValue(key=f"input.value.{i}", value=AnyValue(string_value=text)))
        span.attributes.append(KeyValue(key=text, value=AnyValue(int_value=i)))
    items = [AnyValue(string_value=t) for t in texts]
    span.attributes.append(
        KeyValue(key="list", value=AnyValue(array_value=ArrayValue(values=items)))
    )
    return export_request([span], service_name="agent")


def test_text_redaction_of_received_batches_keeps_every_secret_off_disk(tmp_path: Any) -> None:
    from secrets_corpus import SECRET_VALUES, SECRETS

    redactor = Redactor()
    texts = list(SECRETS.values())
    # an unterminated PEM block runs to the end of the text: the walk must take over
    texts.append("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC")
    store = TraceStore(tmp_path / "t.jsonl", redact=redactor.json, redact_text=redactor.text)
    with store:
        store.write_traces(_received_batch(texts))
        store.write_traces(_received_batch(["plain text", "nothing to hide"]))
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(line) for line in lines)
    for name, secret in SECRET_VALUES.items():
        assert secret not in lines[0], name
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in lines[0]
    assert "nothing to hide" in lines[1]


# --- cassette text -------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=70, deadline=None)
@given(json_values)
def test_pretty_is_json_dumps_indent_2(value: Any) -> None:
    assert pretty(value) == json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)


@pytest.mark.parametrize(
    "value", [{1: "a"}, [("a", 1)], {"x": (1, 2)}, {"f": 1e300 * 10, "n": 2}, {"e": [1.5, -0.0]}]
)
def test_pretty_unusual_values_are_json_dumps(value: Any) -> None:
    try:
        expected = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        with pytest.raises(ValueError, match=re.escape(str(exc))):
            pretty(value)
        return
    assert pretty(value) == expected


def _one_a_line(value: Any, ascii: bool = False) -> Any:
    """``value`` with its lists of objects marked :class:`LineItems`."""
    if isinstance(value, dict):
        return {k: _one_a_line(v, ascii) for k, v in value.items()}
    if isinstance(value, list):
        items = [_one_a_line(v, ascii) for v in value]
        return LineItems(items) if items and type(items[0]) is dict else items
    return value


def _lines_reference(value: Any, pad: str = "", ascii: bool = False) -> str:
    """``json.dumps(indent=2)``'s text, each LineItems list one ``json.dumps`` item a line."""
    inner = pad + "  "
    if type(value) is LineItems and value:
        texts = [json.dumps(v, ensure_ascii=ascii, allow_nan=False) for v in value]
    elif type(value) is list and value:
        texts = [_lines_reference(v, inner, ascii) for v in value]
    elif type(value) is dict and value:
        texts = [
            json.dumps(k, ensure_ascii=ascii) + ": " + _lines_reference(v, inner, ascii)
            for k, v in value.items()
        ]
        return "{\n" + inner + (",\n" + inner).join(texts) + "\n" + pad + "}"
    else:
        return json.dumps(value, ensure_ascii=ascii, allow_nan=False)
    return "[\n" + inner + (",\n" + inner).join(texts) + "\n" + pad + "]"


@settings(max_examples=70, deadline=None)
@given(json_values, st.booleans())
def test_pretty_writes_line_items_one_a_line(value: Any, ascii: bool) -> None:
    marked = _one_a_line(value)
    text = pretty(marked, "    ", ascii=ascii)
    assert text == _lines_reference(marked, "    ", ascii)
    assert json.loads(text) == json.loads(json.dumps(value))


@pytest.mark.parametrize(
    "value",
    [
        {"x": (1, 2), "events": LineItems([{"a": [1, 2]}, {2: "b"}])},
        {"f": 1e300 * 10, "events": LineItems([{"a": 1}])},
        {"events": LineItems([{"a": 1e300 * 10}])},
        [{1: "a"}, LineItems([{"a": "\ud800"}])],
    ],
)
def test_pretty_unusual_values_beside_line_items_are_json_dumps(value: Any) -> None:
    """What ``pretty`` hands to the standard library keeps the lines and the errors."""
    try:
        expected = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        with pytest.raises(ValueError, match=re.escape(str(exc))):
            pretty(value)
        return
    text = pretty(value)
    assert json.loads(text) == json.loads(expected)
    lines = {line.strip().rstrip(",") for line in text.splitlines()}
    for item in value["events"] if isinstance(value, dict) else value[1]:
        assert json.dumps(item, ensure_ascii=False) in lines


def test_large_cassette_loads_with_gc_paused_and_restored(monkeypatch: Any) -> None:
    monkeypatch.setattr(cassette_mod, "_GC_PAUSE_CHARS", 100)
    ex = Exchange(
        provider="openai",
        operation="chat",
        request=CanonicalRequest("/v1/chat/completions", model="m"),
        response=Response(status=200, body={"text": "x" * 200}),
    )
    text = dumps(Cassette(interactions=[ex] * 3, source={}))
    seen: list[bool] = []
    real = cassette_mod.from_json

    def spy(doc: Any, path: str = "<string>") -> Cassette:
        seen.append(gc.isenabled())
        return real(doc, path)

    monkeypatch.setattr(cassette_mod, "from_json", spy)
    loaded = loads(text)
    assert seen == [False] and gc.isenabled()
    assert dumps(loaded) == text


@pytest.mark.parametrize("source", [{}, {"command": ("a", "b"), 1: None}, {"x": [{"y": []}]}])
def test_cassette_text_is_the_layout(source: Any) -> None:
    ex = Exchange(
        provider="openai",
        operation="chat",
        request=CanonicalRequest("/v1/chat/completions", model="m", params={"t": (1, 2)}),
        response=Response(status=200, body={"text": 'é\n"x"', 2: [1.5, None, True]}),
    )
    streamed = replace(
        ex, response=Response(200, events=[SSEEvent('{"a":[1,"é"]}', "x", 0.5)]), stream=True
    )
    for interactions in ([], [ex, ex], [ex, streamed]):
        c = Cassette(interactions=interactions, source=source)
        doc = cassette_mod.to_json(c)
        assert dumps(c) == layout(doc)
        assert json.loads(dumps(c)) == json.loads(json.dumps(doc))


# --- OTLP lines (orjson) ---------------------------------------------------------------------

line_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(st.characters(blacklist_categories=())),  # lone surrogates included
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None)
@given(line_values)
def test_otlp_line_reads_as_the_standard_line(doc: Any) -> None:
    """What orjson writes reads back as what the standard library writes; what it refuses
    (a lone surrogate, an integer beyond 64 bits) is the standard library's line itself."""
    line, reference = codec.otlp_line(doc), jsontext.dumps_line(doc)
    assert json.loads(line) == json.loads(reference)
    if not any(type(v) is float for v in _strings(reference)):
        assert line == reference  # text, integers and the rest are written alike


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_otlp_line_of_a_trace_request_is_the_standard_line(msg: ExportTraceServiceRequest) -> None:
    """Every number of an OTLP document is finite (``NaN`` is written as a string), so
    orjson never writes a ``null`` the standard library would not."""
    doc = codec.to_json(msg)
    assert json.loads(codec.otlp_line(doc)) == json.loads(jsontext.dumps_line(doc))


@pytest.mark.parametrize(
    "doc",
    [{"a": "\ud800"}, {"n": 2**64}, {"t": [1.5e-05, 1e16, -0.0]}, {"k": "\u2028\x7f\x1f"}],
)
def test_otlp_line_of_unusual_values(doc: Any) -> None:
    assert json.loads(codec.otlp_line(doc)) == json.loads(jsontext.dumps_line(doc))


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    )
)
def test_value_text_is_the_standard_line_nan_and_all(value: Any) -> None:
    """A body's text: NaN and the infinities (which orjson writes as null) come out as the
    standard library writes them; every value reads back the same."""
    text, reference = jsontext.value_text(value), jsontext.dumps_line(value)
    assert jsontext.dumps_line(json.loads(text)) == jsontext.dumps_line(json.loads(reference))
    if _holds_non_finite(value):
        assert text == reference


def _holds_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return value != value or value in (float("inf"), float("-inf"))
    if isinstance(value, dict):
        return any(map(_holds_non_finite, value.values()))
    if isinstance(value, list):
        return any(map(_holds_non_finite, value))
    return False


@pytest.mark.parametrize(
    "value",
    [
        {"type": ["string", "null"], "x": float("nan")},  # the word in a string, NaN beside
        ["null", float("inf")],
        [float("-inf"), "null"],
        {"meta": '{"a":null}', "n": float("nan")},
        float("nan"),
        {"schema": {"type": ["integer", "null"]}, "q": 1.5},
    ],
)
def test_value_text_tells_a_null_token_from_the_word(value: Any) -> None:
    """``null`` inside a string (a tool schema's type) is not orjson's NaN: the text is
    orjson's and still the standard library's; a NaN beside it is written as ``NaN``."""
    text, reference = jsontext.value_text(value), jsontext.dumps_line(value)
    assert text == reference


class _Items(list):  # type: ignore[type-arg]
    """A list subclass (orjson writes it as a list)."""


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.lists(inner, max_size=2).map(_Items)
            | st.dictionaries(st.text(max_size=3), inner, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_finite_tells_what_orjson_would_write_as_null(value: Any) -> None:
    """``finite`` is false exactly where a float is NaN or infinite, at any depth (the
    value's text then comes from the standard library, ``NaN`` and all)."""
    assert finite(value) == (not _holds_non_finite(value))
    if not finite(value):
        assert jsontext.value_text(value) == jsontext.dumps_line(value)


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.integers(min_value=2**63 - 4, max_value=2**64 + 4)
        | st.integers(min_value=-(2**63) - 4, max_value=-(2**63) + 4)
        | st.floats()
        | st.text(max_size=4),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=16,
    ),
    st.booleans(),
)
def test_loads_reads_what_the_standard_library_reads(value: Any, ascii_only: bool) -> None:
    """An event's JSON read by orjson where it can be is the standard library's value,
    integer for integer (beyond 64 bits too), NaN and lone surrogates included."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert json.dumps(jsontext.loads(text)) == json.dumps(json.loads(text))


def test_redacting_events_together_is_redacting_each() -> None:
    redactor = Redactor()
    events = ['{"a":"plain"}', '{"b":"Bearer sk-proj-' + "A1b2C3d4" * 5 + '"}', "[DONE]"]
    assert redactor.texts(events) == [redactor.text(e) for e in events]
    assert redactor.texts(events)[1] != events[1]
    plain = ['{"a":"plain"}', "[DONE]"]
    assert redactor.texts(plain) is plain
