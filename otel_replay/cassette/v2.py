"""Cassette format version 2: each distinct message, tool and system part stored once.

::

    {"version": 2, "source": {...},
     "table": {"@3f2a9c1b0d7e": {"role": "user", "content": "..."}, ...},
     "interactions": [{"provider": ..., "request": {"endpoint": ..., "derived": true},
                       "raw_request": {"model": ..., "messages": ["@3f2a9c1b0d7e", ...]},
                       ...}]}

A coding agent resends its whole conversation on every turn; version 1 wrote it out in
full, twice a turn (canonical and raw request). Version 2 writes each shared value once,
in ``table``, named ``@`` and the first 12 hex digits of the SHA-256 of its compact JSON
(more digits only when two values would share a name), sorted by name: the same content
gets the same name when re-recorded, and one more turn adds its new messages and one
interaction. Interactions read as in version 1 except at the *shared places*:

- the elements of each top-level array of ``raw_request`` (``messages``, ``input``,
  ``contents``, ``tools``, ``system``, ...) and each of its other top-level values;
- the elements of the canonical request's ``system``, ``messages`` and ``tools``, when
  the request is written out;
- the ``json`` or ``data`` of each server frame of a model call made over a WebSocket
  (``method`` ``GET``, its frames the response's ``events``), taken as an entry's
  inside (below): a frame stays inline, its audio and other long strings by reference,
  so a payload sent again (by the server, or by the client in a later call's
  ``client_events``) is stored once.

At a shared place an object, an array, a string of 1,024 characters or more, and any
string of the *reference form* (``@`` and 12 to 64 lower-case hex digits) go to the table
and a reference stands in their place; other values stay inline. Inside an object or
array entry, every string that long or of that form is in turn a reference to a string
entry: a long tool result or file is stored once even when the message around it changes
from one turn to the next (an agent moving a ``cache_control`` marker to the newest
message). A string of the reference form at such a place is therefore always a
reference: a literal one is kept, losslessly, as a table entry holding that string.

The canonical request is written ``{"endpoint": ..., "derived": true}`` when the
provider's own code computes exactly it from ``raw_request`` (``providers.get(provider)
.canonical(endpoint, raw_request)``, as the gateway does), and decoding computes it again;
requests that raw bodies do not give back (those read from other tools' traces) are
written out.

Decoding gives one Python object per table entry, shared by every reference to it, and an
element of a recomputed canonical request equal to the previous one at the same place
(component and position) is that previous object, so a loaded cassette's memory follows
its unique content. Nothing may change loaded request JSON in place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from otel_replay.cassette.fields import Fields, Problem, check, naming
from otel_replay.cassette.format import Cassette
from otel_replay.cassette.table import (
    SharedTable,
    is_reference,
    resolved_inside,
    resolved_table,
    same_text,
)
from otel_replay.cassette.v1 import (
    ITEM_PAD,
    array_pieces,
    decode_interaction,
    head_pieces,
    interaction_dict,
    item_text,
    top_fields,
)
from otel_replay.core.errors import ConfigError
from otel_replay.core.exchange import JSON, CanonicalRequest, Exchange
from otel_replay.core.jsontext import LineItems

__all__ = ["V2", "V2Codec", "derivable"]

_LISTS = ("system", "messages", "tools")
_JSON_PARTS = (*_LISTS, "params")


def derivable(exchange: Exchange) -> bool:
    """Whether the provider's own code gives back exactly the canonical request from the
    raw one (then version 2 writes only the endpoint)."""
    if exchange.raw_request is None:
        return False
    from otel_replay import providers  # only a cassette that derives needs provider code

    try:
        provider = providers.get(exchange.provider)
        derived = provider.canonical(exchange.request.endpoint, exchange.raw_request)
    except Exception:  # a body the provider cannot read is simply not derivable
        return False
    request = exchange.request
    return derived == request and all(
        same_text(derived.component(name), request.component(name)) for name in _JSON_PARTS
    )


# --- encoding -------------------------------------------------------------------------


class _Encoder:
    """Version 2 piece by piece: interactions refer to the table this encoder collects."""

    def __init__(self, table: SharedTable) -> None:
        self.table = table

    def item(self, exchange: Exchange, *, lines: bool = False) -> dict[str, JSON]:
        """One interaction as version 2 writes it, its shared values in the table; with
        ``lines``, its events marked to be written one a line."""
        item = interaction_dict(exchange, lines=lines)
        place = self.table.place
        raw = exchange.raw_request
        if type(raw) is dict:
            item["raw_request"] = {
                key: [place(v) for v in value] if type(value) is list else place(value)
                for key, value in raw.items()
            }
        if exchange.method == "GET" and exchange.response.events:  # a WebSocket's frames
            response = item["response"]
            assert isinstance(response, dict) and isinstance(response["events"], list)
            inside = self.table.inside
            frames = [_frame(e, lambda value, _: inside(value)) for e in response["events"]]
            response["events"] = LineItems(frames) if lines else frames
        if derivable(exchange):
            item["request"] = {"endpoint": exchange.request.endpoint, "derived": True}
        else:
            request = item["request"]
            assert isinstance(request, dict)
            for name in _LISTS:
                value = request[name]
                if type(value) is list:
                    request[name] = [place(v) for v in value]
        return item

    def interaction(self, exchange: Exchange) -> str:
        """One interaction's text as it reads in the cassette's list, two levels in."""
        return item_text(self.item(exchange, lines=True))

    def pieces(self, source: dict[str, JSON], texts: Iterable[str]) -> Iterator[str]:
        """The head, the table (every value the interactions given so far refer to, by
        name), each interaction's text in order, and the close."""
        yield from head_pieces({"version": 2, "source": source})
        yield ',\n  "table": '
        opener = "{\n" + ITEM_PAD
        for name, text in self.table.texts.sorted_items():
            yield f'{opener}"{name}": {text}'
            opener = ",\n" + ITEM_PAD
        yield "{}" if opener.startswith("{") else "\n  }"
        yield ',\n  "interactions": '
        yield from array_pieces(texts)

    def close(self) -> None:
        """Drop the table's temporary file, if it has one."""
        self.table.texts.close()


def _frame(event: Any, inside: Callable[[JSON, str], JSON]) -> Any:
    """A server frame (a written event) with its ``json`` or ``data`` taken through
    ``inside`` (given the value and its key)."""
    if type(event) is not dict:
        return event  # not an event: the event's own check names it
    key = "json" if "json" in event else "data"
    return {**event, key: inside(event[key], key)} if key in event else event


# --- decoding -------------------------------------------------------------------------

_TOP_KEYS = frozenset({"version", "source", "table", "interactions"})
_DERIVED_KEYS = frozenset({"endpoint", "derived"})


def _resolve(items: list[Any], table: dict[str, JSON], where: str) -> list[Any]:
    """A shared list with each reference replaced by its table entry."""
    try:
        return [table[v] if is_reference(v) else v for v in items]
    except KeyError:
        i = next(i for i, v in enumerate(items) if is_reference(v) and v not in table)
        raise _unknown(f"{where}[{i}]", items[i]) from None


def _resolve_one(value: JSON, table: dict[str, JSON], where: str) -> JSON:
    if not is_reference(value):
        return value
    try:
        return table[value]
    except KeyError:
        raise _unknown(where, value) from None


def _unknown(where: str, name: object) -> Problem:
    return Problem(where, f"unknown reference {name!r} (no such entry in the table)")


class _Sharing:
    """The elements of recomputed canonical requests by place (component, position): an
    element with the same JSON text as the last one seen at its place becomes that
    object."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, int], JSON] = {}

    def share(self, request: CanonicalRequest) -> CanonicalRequest:
        last = self._last
        changes: dict[str, list[JSON]] = {}
        for name in _LISTS:
            items = getattr(request, name)
            if type(items) is not list:
                continue
            shared = []
            for i, item in enumerate(items):
                seen = last.get((name, i), _NOTHING)
                if seen is not _NOTHING and seen == item and same_text(seen, item):
                    item = seen
                else:
                    last[name, i] = item
                shared.append(item)
            changes[name] = shared
        return dataclasses.replace(request, **changes) if changes else request  # type: ignore[arg-type]


_NOTHING: Any = object()


def _derive(exchange: Exchange, where: str) -> CanonicalRequest:
    if exchange.raw_request is None:
        raise Problem(f"{where}.request.derived", "nothing to derive from: no raw_request")
    from otel_replay import providers  # only a cassette that derives needs provider code

    try:
        provider = providers.get(exchange.provider)
    except ConfigError as exc:
        raise Problem(f"{where}.provider", str(exc)) from None
    try:
        return provider.canonical(exchange.request.endpoint, exchange.raw_request)
    except Exception as exc:  # provider code on a hand-edited body: name the place
        raise Problem(f"{where}.request", f"cannot derive it from raw_request: {exc}") from None


def _resolved_frames(events: list[Any], table: dict[str, JSON], where: str) -> list[Any]:
    """A WebSocket call's written server frames with their references resolved."""
    out = []
    for i, event in enumerate(events):

        def resolved(value: JSON, key: str, at: str = f"{where}[{i}]") -> JSON:
            return resolved_inside(value, table, f"{at}.{key}")

        out.append(_frame(event, resolved))
    return out


def _interaction(value: object, where: str, table: dict[str, JSON], sharing: _Sharing) -> Exchange:
    item = dict(check(value, where, "dict"))
    raw = item.get("raw_request")
    if type(raw) is dict:
        item["raw_request"] = {
            key: _resolve(v, table, f"{where}.raw_request.{key}")
            if type(v) is list
            else _resolve_one(v, table, f"{where}.raw_request.{key}")
            for key, v in raw.items()
        }
    response = item.get("response")
    events = response.get("events") if type(response) is dict else None
    if item.get("method") == "GET" and type(events) is list:  # a WebSocket's frames
        frames = _resolved_frames(events, table, f"{where}.response.events")
        item["response"] = {**response, "events": frames}  # type: ignore[dict-item]
    request = item.get("request")
    derived = type(request) is dict and "derived" in request
    if derived:
        assert isinstance(request, dict)
        Fields(request, f"{where}.request", _DERIVED_KEYS)
        if request["derived"] is not True:
            raise Problem(f"{where}.request.derived", "expected true")
        item["request"] = {"endpoint": request.get("endpoint")}
    elif type(request) is dict:
        item["request"] = {
            key: _resolve(v, table, f"{where}.request.{key}")
            if key in _LISTS and type(v) is list
            else v
            for key, v in request.items()
        }
    exchange = decode_interaction(item, where)
    if derived:
        exchange.request = sharing.share(_derive(exchange, where))
    return exchange


def _decode(doc: dict[str, Any]) -> Cassette:
    source, items = top_fields(doc, _TOP_KEYS)
    table = resolved_table(doc)
    sharing = _Sharing()
    interactions = [
        _interaction(item, f"interactions[{i}]", table, sharing) for i, item in enumerate(items)
    ]
    return Cassette(interactions=interactions, source=source)


# --- the codec ------------------------------------------------------------------------


class V2Codec:
    """Version 2 behind the :class:`~otel_replay.cassette.format.CassetteCodec` interface."""

    version = 2

    def decode(self, doc: dict[str, Any], path: str) -> Cassette:
        with naming(path):
            return _decode(doc)

    def to_json(self, cassette: Cassette) -> dict[str, JSON]:
        encoder = _Encoder(SharedTable(by_identity=True, keep_values=True))
        items: list[JSON] = [encoder.item(ex) for ex in cassette.written()]
        values = encoder.table.values
        return {
            "version": self.version,
            "source": cassette.source,
            "table": {name: values[name] for name in sorted(values)},
            "interactions": items,
        }

    def encode(self, cassette: Cassette) -> str:
        encoder = _Encoder(SharedTable(by_identity=True))
        texts = [encoder.interaction(ex) for ex in cassette.written()]
        return "".join(encoder.pieces(cassette.source, texts))

    def encoder(self, folder: Path | None = None) -> _Encoder:
        return _Encoder(SharedTable(folder=folder))


V2 = V2Codec()
"""The version-2 codec."""
