"""Cassette format version 1: every interaction written out in full.

::

    {"version": 1, "source": {...}, "interactions": [{"provider": ..., "request": ...}]}

The layout is described exactly by ``schemas/cassette.schema.json``. The text is indented
JSON with each SSE event of a response on one line of its own (``jsontext.LineItems``), so
a re-recorded stream's diff shows the events that changed. SSE events whose data
re-serialises to exactly the same compact JSON are kept as ``json``, others as raw
``data``; an interaction holding a lone surrogate, which UTF-8 cannot carry, is written
with every non-ASCII character escaped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from otel_replay.cassette.fields import Fields, Problem, check, naming
from otel_replay.cassette.format import Cassette, LongArray
from otel_replay.cassette.wire import check_event, check_headers, check_status
from otel_replay.core.exchange import (
    ALL_KNOWN,
    COMPONENTS,
    JSON,
    VIEWS,
    CanonicalRequest,
    Exchange,
    Response,
    SSEEvent,
)
from otel_replay.core.jsontext import LineItems, encodes, pretty

__all__ = [
    "ITEM_PAD",
    "V1",
    "V1Codec",
    "array_pieces",
    "compact",
    "decode_interaction",
    "head_pieces",
    "head_text",
    "interaction_dict",
    "item_text",
    "top_fields",
]


def compact(value: JSON) -> str:
    """JSON text without spaces, as SSE data carries it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# --- encoding -------------------------------------------------------------------------


def _event_dict(event: SSEEvent) -> dict[str, JSON]:
    """``json`` when the data re-serialises to exactly the same text, else raw ``data``."""
    item: dict[str, JSON] = {"t": event.t}
    if event.event is not None:
        item["event"] = event.event
    try:
        parsed = json.loads(event.data)
        exact = compact(parsed) == event.data
    except ValueError:
        exact = False
    if exact:
        item["json"] = parsed
    else:
        item["data"] = event.data
    return item


def interaction_dict(ex: Exchange, *, lines: bool = False) -> dict[str, JSON]:
    """One interaction as version 1 writes it, in its fixed key order; with ``lines``,
    its events marked to be written one a line (``LineItems``: for the text only)."""
    req, resp = ex.request, ex.response
    request: dict[str, JSON] = {
        "endpoint": req.endpoint,
        "model": req.model,
        "system": req.system,
        "messages": req.messages,
        "tools": req.tools,
        "params": req.params,
    }
    if req.known != ALL_KNOWN:
        request["known"] = [c for c in COMPONENTS if c in req.known]
    if req.views:
        request["views"] = sorted(req.views)
    response: dict[str, JSON] = {"status": resp.status, "headers": resp.headers}
    if isinstance(resp.body, str):
        response["text"] = resp.body
    elif resp.body is not None:
        response["body"] = resp.body
    if resp.events is not None:
        events = list(map(_event_dict, resp.events))
        response["events"] = LineItems(events) if lines else events
    if resp.fault is not None:
        response["fault"] = resp.fault
    out: dict[str, JSON] = {"provider": ex.provider, "operation": ex.operation}
    if ex.method != "POST":
        out["method"] = ex.method
    out["request"] = request
    if ex.raw_request is not None:
        out["raw_request"] = ex.raw_request
    out["stream"] = ex.stream
    out["response"] = response
    for key in ("trace_id", "span_id", "parent_span_id"):
        value = getattr(ex, key)
        if value is not None:
            out[key] = value
    out["source"] = ex.source
    if ex.context:
        out["context"] = ex.context
    out["start_ns"] = ex.start_ns
    out["end_ns"] = ex.end_ns
    if ex.provenance is not None:
        out["provenance"] = ex.provenance
    return out


ITEM_PAD = "    "
"""How far in a value two levels deep in the document reads (an interaction, a table entry)."""


def item_text(item: JSON, pad: str = ITEM_PAD) -> str:
    """``item`` as it reads nested at ``pad``; a value holding a lone surrogate, which
    UTF-8 cannot carry, with every non-ASCII character escaped (still lossless)."""
    text = pretty(item, pad)
    return text if encodes(text) else pretty(item, pad, ascii=True)


def head_text(head: dict[str, JSON]) -> str:
    """The document's first fields as written, left open for the fields that follow."""
    return "".join(head_pieces(head))


def head_pieces(head: dict[str, JSON]) -> Iterator[str]:
    """``head_text`` in pieces: each :class:`~otel_replay.cassette.format.LongArray`
    among the values of ``head["source"]`` is written one item at a time, as the list of
    its items reads there."""
    source = head.get("source")
    longs: dict[str, LongArray] = {}
    if isinstance(source, dict):
        longs = {key: value for key, value in source.items() if isinstance(value, LongArray)}
    if not longs:
        yield _open_text(head, escape=False)[0]
        return
    assert isinstance(source, dict)
    holes = {key: _HOLE.format(i) for i, key in enumerate(longs)}
    with_holes = {**head, "source": {key: holes.get(key, v) for key, v in source.items()}}
    text, escape = _open_text(with_holes, escape=any(a.surrogates for a in longs.values()))
    marks = [json.dumps(hole) for hole in holes.values()]
    if any(text.count(mark) != 1 for mark in marks):  # a value of the head reads like one
        whole = {k: [*v.items()] if isinstance(v, LongArray) else v for k, v in source.items()}
        yield _open_text({**head, "source": whole}, escape=False)[0]
        return
    for mark, array in zip(marks, longs.values(), strict=True):
        before, _, text = text.partition(mark)
        yield before
        line = before[before.rfind("\n") + 1 :]
        yield from _items_pieces(array.items(), line[: len(line) - len(line.lstrip(" "))], escape)
    yield text


def _open_text(head: dict[str, JSON], *, escape: bool) -> tuple[str, bool]:
    """The head's text, left open, and whether every non-ASCII character in it is
    escaped: when ``escape`` says so, or when it holds a lone surrogate."""
    text = json.dumps(head, indent=2, ensure_ascii=escape, allow_nan=False)
    if not escape and not encodes(text):
        text, escape = json.dumps(head, indent=2, ensure_ascii=True, allow_nan=False), True
    return text[:-2], escape


_HOLE = "\x00long array {}\x00"
"""What stands for a long array while the head around it is written."""


def _items_pieces(items: Iterable[JSON], pad: str, escape: bool) -> Iterator[str]:
    """A list of ``items`` as it reads nested at ``pad``, one item a piece."""
    inner = pad + "  "
    opener = "[\n" + inner
    for item in items:
        yield opener + pretty(item, inner, ascii=escape)
        opener = ",\n" + inner
    yield "[]" if opener.startswith("[") else "\n" + pad + "]"


def array_pieces(texts: Iterable[str]) -> Iterator[str]:
    """A top-level array of item texts, one item a line block, closing the document."""
    opener = "[\n" + ITEM_PAD
    for text in texts:
        yield opener + text
        opener = ",\n" + ITEM_PAD
    yield "[]\n}\n" if opener.startswith("[") else "\n  ]\n}\n"


class _Encoder:
    """Version 1 piece by piece: each interaction stands alone, so it keeps no state."""

    def interaction(self, exchange: Exchange) -> str:
        """One interaction's text as it reads in the cassette's list, two levels in."""
        return item_text(interaction_dict(exchange, lines=True))

    def pieces(self, source: dict[str, JSON], texts: Iterable[str]) -> Iterator[str]:
        """The head, each interaction's text in order, and the close."""
        yield from head_pieces({"version": 1, "source": source})
        yield ',\n  "interactions": '
        yield from array_pieces(texts)

    def close(self) -> None:
        """Nothing to release."""


# --- decoding -------------------------------------------------------------------------

_TOP_KEYS = frozenset({"version", "source", "interactions"})
_INTERACTION_KEYS = frozenset(
    "provider operation method request raw_request stream response trace_id span_id"
    " parent_span_id source context start_ns end_ns provenance".split()
)
_REQUEST_KEYS = frozenset({*COMPONENTS, "known", "views"})
_RESPONSE_KEYS = frozenset({"status", "headers", "body", "text", "events", "fault"})
_EVENT_KEYS = frozenset({"t", "event", "json", "data"})


def _decode_request(value: object, where: str) -> CanonicalRequest:
    obj = Fields(value, where, _REQUEST_KEYS)
    known: frozenset[str] = ALL_KNOWN
    if "known" in obj.data:
        names = obj.req("known", "list")
        for i, name in enumerate(names):
            if name not in ALL_KNOWN:
                raise Problem(f"{where}.known[{i}]", f"not a component: {name!r}")
        known = frozenset(names)
    views = obj.opt("views", [], "list")
    for i, name in enumerate(views):
        if name not in VIEWS:
            raise Problem(f"{where}.views[{i}]", f"not a lossy form: {name!r}")
    return CanonicalRequest(
        endpoint=obj.req("endpoint", "str"),
        model=obj.opt("model", None, "str", "null"),
        system=obj.opt("system", None, "list", "null"),
        messages=obj.opt("messages", None, "list", "null"),
        tools=obj.opt("tools", None, "list", "null"),
        params=obj.opt("params", {}, "dict"),
        known=known,
        views=frozenset(views),
    )


def _decode_event(value: object, where: str) -> SSEEvent:
    obj = Fields(value, where, _EVENT_KEYS)
    if ("json" in obj.data) == ("data" in obj.data):
        raise Problem(where, "needs exactly one of 'json' and 'data'")
    data = obj.req("data", "str") if "data" in obj.data else compact(obj.data["json"])
    event, t = obj.opt("event", None, "str"), float(obj.req("t", "number"))
    check_event(event, data, t, where)
    return SSEEvent(data=data, event=event, t=t)


def _decode_response(value: object, where: str) -> Response:
    obj = Fields(value, where, _RESPONSE_KEYS)
    if "body" in obj.data and "text" in obj.data:
        raise Problem(where, "has both 'body' and 'text'")
    body = obj.req("text", "str") if "text" in obj.data else obj.data.get("body")
    events = obj.opt("events", None, "list")
    headers = obj.opt("headers", {}, "dict")
    for name, header in headers.items():
        check(header, f"{where}.headers.{name}", "str")
    check_headers(headers, where)
    status, fault = obj.req("status", "int"), obj.opt("fault", None, "str")
    check_status(status, fault, where)
    return Response(
        status=status,
        headers=headers,
        body=body,
        events=None
        if events is None
        else [_decode_event(e, f"{where}.events[{i}]") for i, e in enumerate(events)],
        fault=fault,
    )


def decode_interaction(value: object, where: str) -> Exchange:
    """One interaction, with every field type-checked; raises Problem naming the place."""
    obj = Fields(value, where, _INTERACTION_KEYS)
    return Exchange(
        provider=obj.req("provider", "str"),
        operation=obj.req("operation", "str"),
        request=_decode_request(obj.req("request", "dict"), f"{where}.request"),
        response=_decode_response(obj.req("response", "dict"), f"{where}.response"),
        raw_request=obj.data.get("raw_request"),
        method=obj.opt("method", "POST", "str"),
        stream=obj.opt("stream", False, "bool"),
        start_ns=obj.opt("start_ns", 0, "int"),
        end_ns=obj.opt("end_ns", 0, "int"),
        trace_id=obj.opt("trace_id", None, "str"),
        span_id=obj.opt("span_id", None, "str"),
        parent_span_id=obj.opt("parent_span_id", None, "str"),
        source=obj.opt("source", "otel-replay", "str"),
        provenance=obj.opt("provenance", None, "dict"),
        context=obj.opt("context", {}, "dict"),
    )


def top_fields(doc: dict[str, Any], keys: frozenset[str]) -> tuple[dict[str, Any], list[Any]]:
    """The document's ``source`` and ``interactions``, refusing a field not in ``keys``."""
    for key in doc:
        if key not in keys:
            raise Problem(key, "unknown field")
    source = doc.get("source", {})
    if not isinstance(source, dict):
        raise Problem("source", "expected an object")
    items = doc.get("interactions")
    if not isinstance(items, list):
        raise Problem("interactions", "expected an array")
    return source, items


def _decode(doc: dict[str, Any]) -> Cassette:
    source, items = top_fields(doc, _TOP_KEYS)
    interactions = [decode_interaction(item, f"interactions[{i}]") for i, item in enumerate(items)]
    return Cassette(interactions=interactions, source=source)


# --- the codec ------------------------------------------------------------------------


class V1Codec:
    """Version 1 behind the :class:`~otel_replay.cassette.format.CassetteCodec` interface."""

    version = 1

    def decode(self, doc: dict[str, Any], path: str) -> Cassette:
        with naming(path):
            return _decode(doc)

    def to_json(self, cassette: Cassette) -> dict[str, JSON]:
        return {
            "version": self.version,
            "source": cassette.source,
            "interactions": [interaction_dict(ex) for ex in cassette.written()],
        }

    def encode(self, cassette: Cassette) -> str:
        encoder = _Encoder()
        texts = [encoder.interaction(ex) for ex in cassette.written()]
        return "".join(encoder.pieces(cassette.source, texts))

    def encoder(self, folder: Path | None = None) -> _Encoder:
        return _Encoder()


V1 = V1Codec()
"""The version-1 codec."""
