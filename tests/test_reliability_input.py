"""Bad input: malformed OTLP at the gateway's own port, fuzzed decoders, corrupt cassettes.

Bad input gets a spec answer or a typed error naming the place; nothing received before
it is lost, and the gateway keeps serving model calls.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import openai
import pytest
from google.rpc import status_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from otel_replay.cassette.model import dumps, load, loads
from otel_replay.core.errors import CassetteError, TraceFormatError
from otel_replay.core.exchange import SSEEvent
from otel_replay.gateway.runner import GatewayConfig, GatewayServer, GatewayThread
from otel_replay.otlp import codec
from otel_replay.streams.sse import SSEParser, encode, parse_all
from otel_replay.testing.stub import StubUpstream, run_stub

CLI = [sys.executable, "-m", "otel_replay"]
PROTOBUF = {"content-type": "application/x-protobuf"}
JSON_CT = {"content-type": "application/json"}
MAX_BODY = 32 * 1024 * 1024
FUZZ = settings(
    max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def _batch(name: str, n: int = 3, trace_byte: int = 1) -> ExportTraceServiceRequest:
    doc = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": f"{trace_byte:032x}",
                                "spanId": f"{i + 1:016x}",
                                "name": f"{name}-{i}",
                                "kind": 1,
                                "startTimeUnixNano": "1",
                                "endTimeUnixNano": "2",
                            }
                            for i in range(n)
                        ]
                    }
                ]
            }
        ]
    }
    return codec.traces_from_json(doc)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _deep_proto(depth: int) -> bytes:
    """A trace request whose one span has an attribute nested ``depth`` kvlists deep,
    encoded by hand (the protobuf runtime itself refuses to build it)."""
    value = _field(1, b"bottom")
    for _ in range(depth):
        value = _field(6, _field(1, _field(1, b"k") + _field(2, value)))
    span = (
        _field(1, b"\x03" * 16)
        + _field(2, b"\x03" * 8)
        + _field(5, b"deep-0")
        + _field(9, _field(1, b"nested") + _field(2, value))
    )
    return _field(1, _field(2, _field(2, span)))


def _bad_payloads() -> list[tuple[str, bytes, dict[str, str], set[int]]]:
    good = _batch("late").SerializeToString()
    short_ids = _batch("short-ids")
    for span in short_ids.resource_spans[0].scope_spans[0].spans:
        span.trace_id = b"\x01" * 5
    deep_json = '{"resourceSpans": ' + "[" * 100_000 + "]" * 100_000 + "}"
    return [
        ("truncated protobuf", good[: len(good) // 2], PROTOBUF, {400}),
        ("garbage protobuf", b"\xff" * 64, PROTOBUF, {400}),
        ("wrong content type", good, {"content-type": "text/plain"}, {415}),
        ("invalid gzip", b"not gzip at all", {**PROTOBUF, "content-encoding": "gzip"}, {400}),
        ("unknown encoding", good, {**PROTOBUF, "content-encoding": "snappy"}, {415}),
        ("invalid JSON", b'{"resourceSpans": [', JSON_CT, {400}),
        ("JSON not an object", b"[1, 2, 3]", JSON_CT, {400}),
        (
            "JSON id of the wrong length",
            b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"abcd","spanId":"12"}]}]}]}',
            JSON_CT,
            {200, 400},
        ),
        ("protobuf ids of the wrong length", short_ids.SerializeToString(), PROTOBUF, {200}),
        ("deeply nested protobuf", _deep_proto(200), PROTOBUF, {400}),
        ("deeply nested JSON", deep_json.encode(), JSON_CT, {400}),
        ("oversized body", b"\0" * (MAX_BODY + 1), PROTOBUF, {413}),
        (
            "gzip bomb",
            gzip.compress(b"\0" * (MAX_BODY + 1024)),
            {**PROTOBUF, "content-encoding": "gzip"},
            {400, 413},
        ),
    ]


@pytest.fixture
async def gateway(stub: StubUpstream, tmp_path: Path) -> AsyncIterator[GatewayServer]:
    server = GatewayServer(
        GatewayConfig(
            mode="record",
            cassette=tmp_path / "c.json",
            traces=tmp_path / "t.jsonl",
            upstream_openai=stub.openai_url,
            grpc_port=None,
            environ={"OPENAI_API_KEY": "sk-test-input-0123456789"},
        )
    )
    await server.start()
    yield server
    await server.stop()


async def test_bad_otlp_at_the_gateway_port_loses_nothing(
    gateway: GatewayServer, tmp_path: Path
) -> None:
    client = openai.AsyncOpenAI(
        base_url=gateway.env["OPENAI_BASE_URL"], api_key="sk-test-input-0123456789", max_retries=0
    )
    url = gateway.url + "/v1/traces"
    async with aiohttp.ClientSession() as http:
        async with http.post(
            url, data=_batch("before").SerializeToString(), headers=PROTOBUF
        ) as resp:
            assert resp.status == 200
        for name, body, headers, statuses in _bad_payloads():
            data = io.BytesIO(body) if len(body) > 1024 * 1024 else body
            async with http.post(url, data=data, headers=headers) as resp:
                raw = await resp.read()
                assert resp.status in statuses, (name, resp.status, raw[:200])
                if resp.status >= 400 and resp.content_type == "application/x-protobuf":
                    status_pb2.Status.FromString(raw)  # a google.rpc.Status, per the spec
                if resp.status == 200:  # a partial success rejecting every span sent
                    if resp.content_type == "application/json":
                        rejected = int(json.loads(raw)["partialSuccess"]["rejectedSpans"])
                    else:
                        answer = ExportTraceServiceResponse.FromString(raw)
                        rejected = answer.partial_success.rejected_spans
                    assert rejected == (3 if "protobuf" in name else 1), name
            reply = await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": name}]
            )
            assert reply.choices[0].message.content == f"stub reply to: {name}"
        async with http.post(
            url, data=_batch("after", trace_byte=2).SerializeToString(), headers=PROTOBUF
        ) as resp:
            assert resp.status == 200
    await client.close()
    assert gateway.session.store.spans_received == 6
    summary = await gateway.stop()
    assert summary.live == len(_bad_payloads())
    names = []
    for line in (tmp_path / "t.jsonl").read_text().splitlines():
        for span in codec.iter_spans(codec.traces_from_json(line)):
            names.append(span[-1].name if isinstance(span, tuple) else span.name)
    for prefix in ("before", "after"):
        assert [n for n in names if n.startswith(prefix)] == [f"{prefix}-{i}" for i in range(3)]
    assert not any(n.startswith(("short-ids", "deep", "late")) for n in names)


# --- fuzzing the decoders ---------------------------------------------------------------

_VALID_PROTO = _batch("fuzz", 4).SerializeToString()


@FUZZ
@given(st.binary(max_size=512))
def test_fuzz_traces_from_proto_random_bytes(data: bytes) -> None:
    try:
        codec.traces_from_proto(data)
    except TraceFormatError:
        pass


@FUZZ
@given(
    st.lists(
        st.tuples(st.integers(0, len(_VALID_PROTO) - 1), st.integers(0, 255)),
        min_size=1,
        max_size=8,
    ),
    st.integers(0, len(_VALID_PROTO)),
)
def test_fuzz_traces_from_proto_mutated(flips: list[tuple[int, int]], cut: int) -> None:
    data = bytearray(_VALID_PROTO)
    for at, value in flips:
        data[at] = value
    for payload in (bytes(data), bytes(data[:cut])):
        try:
            msg = codec.traces_from_proto(payload)
        except TraceFormatError:
            continue
        codec.drop_invalid_spans(msg)
        codec.to_json(msg)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "resourceSpans",
                    "scopeSpans",
                    "spans",
                    "traceId",
                    "spanId",
                    "parentSpanId",
                    "name",
                    "attributes",
                    "key",
                    "value",
                    "stringValue",
                    "kvlistValue",
                    "values",
                    "events",
                    "links",
                    "resource",
                    "scope",
                    "kind",
                    "status",
                    "startTimeUnixNano",
                ]
            )
            | st.text(max_size=8),
            inner,
            max_size=4,
        )
    ),
    max_leaves=30,
)


@FUZZ
@given(_JSON)
def test_fuzz_traces_from_json_documents(doc: Any) -> None:
    for data in (json.dumps(doc), {"resourceSpans": doc}):
        try:
            codec.traces_from_json(data)  # type: ignore[arg-type]
        except TraceFormatError:
            pass


@FUZZ
@given(st.binary(max_size=256) | st.text(max_size=256))
def test_fuzz_traces_from_json_raw_text(data: bytes | str) -> None:
    try:
        codec.traces_from_json(data)
    except TraceFormatError:
        pass


_SSE_BYTES = st.lists(
    st.sampled_from(
        [
            b"data: ",
            b"event: ",
            b"id: 1",
            b":comment",
            b"\n",
            b"\r\n",
            b"\r",
            b'{"a":1}',
            b"[DONE]",
            b"\xff\xfe",
            "é".encode(),
            b"retry: 5",
            b" ",
        ]
    ),
    max_size=40,
).map(b"".join)


@FUZZ
@given(_SSE_BYTES, st.lists(st.integers(0, 400), max_size=6))
def test_fuzz_sse_parser_never_raises_and_splits_do_not_matter(
    payload: bytes, cuts: list[int]
) -> None:
    whole = parse_all(payload)
    parser = SSEParser()
    events: list[SSEEvent] = []
    last = 0
    for cut in sorted(c for c in cuts if c <= len(payload)):
        events += parser.feed(payload[last:cut])
        last = cut
    events += parser.feed(payload[last:])
    events += parser.close()
    assert [(e.event, e.data) for e in events] == [(e.event, e.data) for e in whole]


@FUZZ
@given(
    st.lists(
        st.tuples(st.none() | st.text("abc_", min_size=1, max_size=5), st.text(max_size=30)),
        max_size=5,
    )
)
def test_fuzz_sse_encode_parse_round_trip(pairs: list[tuple[str | None, str]]) -> None:
    events = [SSEEvent(data=data.replace("\r", ""), event=name) for name, data in pairs]
    payload = b"".join(encode(e) for e in events)
    assert [(e.event, e.data) for e in parse_all(payload)] == [(e.event, e.data) for e in events]


@pytest.fixture(scope="module")
def recorded_cassette(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real cassette: a streamed and a plain tool-calling run, recorded."""
    sys.path.insert(0, str(Path(__file__).parent))
    import anthropic
    from agents import anthropic_agent, openai_agent

    path = tmp_path_factory.mktemp("rec") / "c.json"
    with (
        run_stub() as stub,
        GatewayThread(
            GatewayConfig(
                mode="record",
                cassette=path,
                grpc_port=None,
                upstream_openai=stub.openai_url,
                upstream_anthropic=stub.anthropic_url,
                environ={},
            )
        ) as gw,
    ):
        openai_agent(
            openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key="sk-x", max_retries=0),
            stream=True,
        )
        anthropic_agent(
            anthropic.Anthropic(
                base_url=gw.env["ANTHROPIC_BASE_URL"], api_key="sk-x", max_retries=0
            )
        )
    return path.read_text()


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _paths(value, (*prefix, i))


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_fuzz_cassette_loads_only_raises_cassette_error(
    recorded_cassette: str, data: st.DataObject
) -> None:
    doc = json.loads(recorded_cassette)
    paths = list(_paths(doc))
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(paths))
        value = data.draw(_JSON)
        if not where:
            doc = value
            break
        parent = doc
        try:
            for key in where[:-1]:
                parent = parent[key]
            parent[where[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    text = json.dumps(doc)
    cut = data.draw(st.integers(0, len(text)))
    for candidate in (text, text[:cut]):
        try:
            cassette = loads(candidate, "fuzzed.json")
        except CassetteError as exc:
            assert str(exc).startswith("fuzzed.json")
            continue
        assert loads(dumps(cassette)).interactions == cassette.interactions


# --- corrupt cassettes through the CLI --------------------------------------------------


def _edit(text: str, change: Any) -> str:
    doc = json.loads(text)
    change(doc)
    return json.dumps(doc, indent=2)


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def change(doc: Any) -> None:
        for key in path[:-1]:
            doc = doc[key]
        doc[path[-1]] = value

    return change


CORRUPT = {
    "truncated": (lambda t: t[: len(t) // 2], "line "),
    "not JSON at all": (lambda t: "\x00\x01binary", "line 1"),
    "wrong version": (lambda t: _edit(t, _set(("version",), "one")), "at version"),
    "newer version": (lambda t: _edit(t, _set(("version",), 99)), "upgrade otel-replay"),
    "no version": (lambda t: _edit(t, lambda d: d.pop("version")), "at version"),
    "interactions not a list": (lambda t: _edit(t, _set(("interactions",), {})), "at interactions"),
    "status as a string": (
        lambda t: _edit(t, _set(("interactions", 1, "response", "status"), "200")),
        "at interactions[1].response.status",
    ),
    "unknown field": (
        lambda t: _edit(t, _set(("interactions", 0, "surprise"), 1)),
        "at interactions[0].surprise",
    ),
    "event without data": (
        lambda t: _edit(t, _set(("interactions", 0, "response", "events"), [{"event": "x"}])),
        "at interactions[0].response.events[0]",
    ),
    "top level array": (lambda t: "[]", "top level"),
}


@pytest.mark.parametrize("case", list(CORRUPT))
def test_corrupt_cassette_via_cli_exits_2_with_one_line(
    tmp_path_factory: pytest.TempPathFactory, recorded_cassette: str, case: str
) -> None:
    change, expected = CORRUPT[case]
    # outside tmp_path: the schema check of conftest would (rightly) reject the file
    path = tmp_path_factory.mktemp("corrupt") / "bad.json"
    path.write_text(change(recorded_cassette))
    with pytest.raises(CassetteError):
        load(path)
    for args in (
        ["replay", "--cassette", str(path), "--mode", "strict", "--", sys.executable, "-c", "pass"],
        ["why", "--cassette", str(path)],
    ):
        proc = subprocess.run(
            [*CLI, *args], capture_output=True, text=True, timeout=60, env={**os.environ}
        )
        assert proc.returncode == 2, (args[0], proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, (args[0], proc.stderr)
        assert "Traceback" not in proc.stderr
        assert str(path) in lines[0] and expected in lines[0], (args[0], lines[0])


def _nesting(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_nesting(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_nesting(v) for v in value), default=0)
    return 0


_TRICKY_TEXT = st.text(alphabet='ab"\\[]{}/\n\u00e9\U0001f600', max_size=12)
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | _TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TRICKY_TEXT, inner, max_size=4),
    max_leaves=40,
)


@given(value=_JSON_VALUES, limit=st.integers(0, 8), ascii_only=st.booleans())
def test_the_depth_check_finds_the_nesting_of_the_body(
    value: object, limit: int, ascii_only: bool
) -> None:
    """A body nesting beyond the limit is refused, whatever brackets, quotes and escapes
    its strings hold; one within it is read."""
    from otel_replay.gateway.call import BodyTooDeep, nests_deeper, parse_body

    raw = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert nests_deeper(json.loads(raw), limit) == (_nesting(value) > limit)
    if _nesting(value) > limit:
        with pytest.raises(BodyTooDeep):
            parse_body(raw, limit)
    else:
        assert parse_body(raw, limit) == json.loads(raw)


def test_a_request_holding_nan_is_recorded_as_its_text_and_replays(tmp_path: Path) -> None:
    """An agent writing its body with ``json.dumps`` sends ``temperature=float("nan")``
    as a bare ``NaN``, which JSON (and so a cassette) cannot hold: the body is recorded as
    the text it is, beside the run's other calls, and replays strictly; the run's
    cassette is written, not lost."""
    cassette = tmp_path / "c.json"

    def ask(env: dict[str, str], temperature: float | None) -> str:
        body: dict[str, Any] = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
        if temperature is not None:
            body["temperature"] = temperature
        answer = httpx.post(
            env["OPENAI_BASE_URL"] + "/chat/completions",
            content=json.dumps(body),  # NaN written as NaN, as the standard library does
            headers={"authorization": "Bearer sk-x", "content-type": "application/json"},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        content: str = answer.json()["choices"][0]["message"]["content"]
        return content

    with run_stub() as stub:
        config = GatewayConfig(
            mode="record",
            cassette=cassette,
            upstreams={"openai": stub.openai_url},
            grpc_port=None,
            environ={},
        )
        with GatewayThread(config) as gw:
            recorded = [ask(gw.env, float("nan")), ask(gw.env, None)]
            summary = gw.stop()
    assert not summary.failed and summary.live == 2
    bodies = [ex.raw_request for ex in load(cassette).interactions]
    assert isinstance(bodies[0], str) and '"temperature":NaN' in bodies[0].replace(" ", "")
    assert isinstance(bodies[1], dict)

    strict = GatewayConfig(mode="strict", cassette=cassette, grpc_port=None, environ={})
    with GatewayThread(strict) as gw:
        replayed = [ask(gw.env, float("nan")), ask(gw.env, None)]
        summary = gw.stop()
    assert replayed == recorded
    assert summary.replayed == 2 and not summary.misses


def test_a_trace_holding_doubles_json_cannot_write_builds(tmp_path: Path) -> None:
    """A NaN or an infinity in a model call's parameters or an agent span's kept
    attribute (OTLP JSON writes them as strings) is kept as that string: ``build`` writes
    the cassette instead of failing on the whole file."""
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    def span(span_id: int, attrs: dict[str, Any], name: str) -> Span:
        made = Span(trace_id=bytes.fromhex(f"{1:032x}"), span_id=span_id.to_bytes(8, "big"))
        made.name, made.start_time_unix_nano, made.end_time_unix_nano = name, 500, 1_500
        for key, value in attrs.items():
            kv = made.attributes.add()
            kv.key = key
            if isinstance(value, float):
                kv.value.double_value = value
            else:
                kv.value.string_value = value
        return made

    call = span(
        1,
        {
            "gen_ai.provider.name": "openai",
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "m",
            "gen_ai.request.temperature": float("nan"),
            "gen_ai.request.top_p": float("inf"),
            "gen_ai.input.messages": '[{"role":"user","parts":[{"type":"text","content":"hi"}]}]',
            "gen_ai.output.messages": (
                '[{"role":"assistant","parts":[{"type":"text","content":"yo"}],'
                '"finish_reason":"stop"}]'
            ),
        },
        "chat m",
    )
    tool = span(2, {"gen_ai.operation.name": "execute_tool", "gen_ai.agent.id": float("-inf")}, "t")
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    scope.spans.extend([call, tool])
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps(codec.to_json(request)) + "\n")

    done = subprocess.run(
        [*CLI, "build", str(traces), "-o", str(tmp_path / "c.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    built = load(tmp_path / "c.json")
    assert built.interactions[0].request.params == {"temperature": "NaN", "top_p": "Infinity"}
    kept = [s["attributes"] for s in built.source["spans"]]
    assert kept == [{"gen_ai.operation.name": "execute_tool", "gen_ai.agent.id": "-Infinity"}]
