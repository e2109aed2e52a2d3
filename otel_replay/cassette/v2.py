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
  the request is written out.

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
import hashlib
import re
from collections.abc import Iterable, Iterator
from typing import Any

from otel_replay.cassette.fields import Fields, Problem, check, naming
from otel_replay.cassette.format import Cassette
from otel_replay.cassette.v1 import (
    ITEM_PAD,
    array_pieces,
    compact,
    decode_interaction,
    head_text,
    interaction_dict,
    item_text,
    top_fields,
)
from otel_replay.core.errors import ConfigError
from otel_replay.core.exchange import JSON, CanonicalRequest, Exchange

__all__ = ["REFERENCE", "V2", "V2Codec", "derivable"]

REFERENCE = re.compile(r"@[0-9a-f]{12,64}")
"""The reference form: at a shared place, a string of this form names a table entry."""

_DIGITS = 12
_LONG = 1024
_LISTS = ("system", "messages", "tools")
_JSON_PARTS = (*_LISTS, "params")


def _is_reference(value: object) -> bool:
    return type(value) is str and REFERENCE.fullmatch(value) is not None


def _shared(value: JSON) -> bool:
    """Whether a value at a shared place goes to the table."""
    kind = type(value)
    if kind is dict or kind is list:
        return True
    return kind is str and _shared_text(value)


def _shared_text(text: str) -> bool:
    """Whether a string goes to the table: a long one, or one of the reference form."""
    return len(text) >= _LONG or (text[:1] == "@" and REFERENCE.fullmatch(text) is not None)


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
        _same_text(derived.component(name), request.component(name)) for name in _JSON_PARTS
    )


# --- encoding -------------------------------------------------------------------------


class _Table:
    """The shared values one file holds, by name, as their text in the table.

    ``by_identity`` also remembers values by object identity (holding them, so an id is
    never reused): a whole cassette encoded at once, whose loaded values are shared
    objects, then hashes each shared value once."""

    def __init__(self, *, by_identity: bool = False, keep_values: bool = False) -> None:
        self.texts: dict[str, str] = {}
        self.values: dict[str, JSON] = {}
        self._names: dict[str, str] = {}
        self._ids: dict[int, tuple[JSON, str]] | None = {} if by_identity else None
        self._keep = keep_values

    def place(self, value: JSON) -> JSON:
        """What stands at a shared place for ``value``: a reference, or ``value`` itself."""
        if not _shared(value):
            return value
        ids = self._ids
        if ids is not None:
            known = ids.get(id(value))
            if known is not None:
                return known[1]
        key = compact(value)
        name = self._names.get(key)
        if name is None:
            name = self._add(key, value)
        if ids is not None:
            ids[id(value)] = (value, name)
        return name

    def _add(self, key: str, value: JSON) -> str:
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        size = _DIGITS
        while f"@{digest[:size]}" in self.texts and size < len(digest):
            size += 4
        name = f"@{digest[:size]}"
        self._names[key] = name
        written = self._inside(value) if type(value) is not str else value
        self.texts[name] = item_text(written)
        if self._keep:
            self.values[name] = written
        return name

    def _inside(self, value: JSON) -> JSON:
        """A shared object or array as its entry holds it: each string in it that goes
        to the table (see ``_shared_text``) a reference to a string entry."""
        kind = type(value)
        if kind is dict:
            return {k: self._inside(v) for k, v in value.items()}
        if kind is list:
            return [self._inside(v) for v in value]
        if kind is str and _shared_text(value):
            return self.place(value)
        return value


class _Encoder:
    """Version 2 piece by piece: interactions refer to the table this encoder collects."""

    def __init__(self, *, by_identity: bool = False, keep_values: bool = False) -> None:
        self.table = _Table(by_identity=by_identity, keep_values=keep_values)

    def item(self, exchange: Exchange) -> dict[str, JSON]:
        """One interaction as version 2 writes it, its shared values in the table."""
        item = interaction_dict(exchange)
        place = self.table.place
        raw = exchange.raw_request
        if type(raw) is dict:
            item["raw_request"] = {
                key: [place(v) for v in value] if type(value) is list else place(value)
                for key, value in raw.items()
            }
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
        return item_text(self.item(exchange))

    def pieces(self, source: dict[str, JSON], texts: Iterable[str]) -> Iterator[str]:
        """The head, the table (every value the interactions given so far refer to, by
        name), each interaction's text in order, and the close."""
        yield head_text({"version": 2, "source": source}) + ',\n  "table": '
        entries = self.table.texts
        opener = "{\n" + ITEM_PAD
        for name in sorted(entries):
            yield f'{opener}"{name}": {entries[name]}'
            opener = ",\n" + ITEM_PAD
        yield "{}" if opener.startswith("{") else "\n  }"
        yield ',\n  "interactions": '
        yield from array_pieces(texts)


# --- decoding -------------------------------------------------------------------------

_TOP_KEYS = frozenset({"version", "source", "table", "interactions"})
_DERIVED_KEYS = frozenset({"endpoint", "derived"})


def _resolve(items: list[Any], table: dict[str, JSON], where: str) -> list[Any]:
    """A shared list with each reference replaced by its table entry."""
    try:
        return [table[v] if _is_reference(v) else v for v in items]
    except KeyError:
        i = next(i for i, v in enumerate(items) if _is_reference(v) and v not in table)
        raise _unknown(f"{where}[{i}]", items[i]) from None


def _resolve_one(value: JSON, table: dict[str, JSON], where: str) -> JSON:
    if not _is_reference(value):
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
                if seen is not _NOTHING and seen == item and _same_text(seen, item):
                    item = seen
                else:
                    last[name, i] = item
                shared.append(item)
            changes[name] = shared
        return dataclasses.replace(request, **changes) if changes else request  # type: ignore[arg-type]


_NOTHING: Any = object()


def _same_text(a: Any, b: Any) -> bool:
    """Whether two values already ``==`` have the same JSON text too: Python equates
    ``1``, ``1.0`` and ``True``, and dicts whose keys come in another order. Only
    containers and values of different types are looked into (the loop runs per node)."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        if list(a) != list(b):
            return False
        pairs = zip(a.values(), b.values(), strict=True)
    elif kind is list:
        pairs = zip(a, b, strict=True)
    else:
        return True
    for x, y in pairs:
        if x is not y and (type(x) is not type(y) or type(x) in _CONTAINERS):
            if not _same_text(x, y):
                return False
    return True


_CONTAINERS = frozenset({dict, list})


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


class _Inside(Exception):
    """A bad reference inside a table entry; ``steps`` lead to it from the entry."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.steps: list[str] = []


def _inside(value: Any, strings: dict[str, JSON]) -> Any:
    """A table entry with each reference in it replaced by its string entry; the same
    object where it holds none."""
    kind = type(value)
    if kind is dict:
        out = {key: _step(item, strings, key) for key, item in value.items()}
        return value if all(out[k] is v for k, v in value.items()) else out
    if kind is list:
        items = [_step(item, strings, i) for i, item in enumerate(value)]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if kind is str and value[:1] == "@" and REFERENCE.fullmatch(value):
        found = strings.get(value)
        if found is None:
            raise _Inside(f"unknown reference {value!r} (no string entry of that name)")
        return found
    return value


def _step(item: Any, strings: dict[str, JSON], key: str | int) -> Any:
    try:
        return _inside(item, strings)
    except _Inside as bad:
        bad.steps.append(f"[{key}]" if type(key) is int else f".{key}")
        raise


def _table(doc: dict[str, Any]) -> dict[str, JSON]:
    """The table, each entry with the string entries it refers to in place."""
    if "table" not in doc:
        raise Problem("table", "missing")
    table = doc["table"]
    if not isinstance(table, dict):
        raise Problem("table", "expected an object")
    for name in table:
        if not _is_reference(name):
            raise Problem(f"table.{name}", "not a reference name (@ and 12 to 64 hex digits)")
    strings = {name: value for name, value in table.items() if type(value) is str}
    out: dict[str, JSON] = {}
    for name, value in table.items():
        try:
            out[name] = _inside(value, strings) if type(value) is not str else value
        except _Inside as bad:
            raise Problem(f"table.{name}" + "".join(reversed(bad.steps)), bad.problem) from None
    return out


def _decode(doc: dict[str, Any]) -> Cassette:
    source, items = top_fields(doc, _TOP_KEYS)
    table = _table(doc)
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
        encoder = _Encoder(by_identity=True, keep_values=True)
        items: list[JSON] = [encoder.item(ex) for ex in cassette.interactions]
        values = encoder.table.values
        return {
            "version": self.version,
            "source": cassette.source,
            "table": {name: values[name] for name in sorted(values)},
            "interactions": items,
        }

    def encode(self, cassette: Cassette) -> str:
        encoder = _Encoder(by_identity=True)
        texts = [encoder.interaction(ex) for ex in cassette.interactions]
        return "".join(encoder.pieces(cassette.source, texts))

    def encoder(self) -> _Encoder:
        return _Encoder()


V2 = V2Codec()
"""The version-2 codec."""
