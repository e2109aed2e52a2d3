"""The cassette: recorded exchanges in one pretty-printed, stably ordered JSON file.

Pure core, thin I/O: ``dumps`` / ``loads`` convert between a ``Cassette`` and text;
``dump`` / ``load`` only move that text to and from disk (crash-safely on the way out).
Every file carries ``version``; older versions migrate through ``MIGRATIONS`` and a newer
one is refused with "upgrade otel-replay". Problems name the file and the place:
``line 12`` for broken JSON, ``interactions[3].response.status`` for a wrong field.

The layout is described exactly by ``schemas/cassette.schema.json``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from otel_replay._version import __version__
from otel_replay.core.errors import CassetteError, CassetteVersionError
from otel_replay.core.exchange import (
    ALL_KNOWN,
    COMPONENTS,
    JSON,
    CanonicalRequest,
    Exchange,
    Response,
    SSEEvent,
)
from otel_replay.core.gcpause import paused_gc
from otel_replay.core.jsontext import pretty

__all__ = [
    "FORMAT_VERSION",
    "MIGRATIONS",
    "Cassette",
    "atomic_text",
    "convert_0_to_1",
    "default_source",
    "document",
    "dump",
    "dumps",
    "interaction_text",
    "load",
    "loads",
]

FORMAT_VERSION = 1


@dataclass(slots=True)
class Cassette:
    """Recorded interactions, in recording order, and where they came from.

    ``source`` is free-form provenance: ``command``, ``recorded_at`` (ISO time),
    ``traces`` (trace files), ``otel_replay`` (the version that wrote it), ...
    """

    interactions: list[Exchange] = field(default_factory=list)
    source: dict[str, JSON] = field(default_factory=dict)


def default_source(**extra: JSON) -> dict[str, JSON]:
    """Provenance for a new cassette: the writing version and time, plus ``extra``."""
    source: dict[str, JSON] = {
        "otel_replay": __version__,
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    source.update(extra)
    return source


# --- encoding -------------------------------------------------------------------------


def _compact(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _event_dict(event: SSEEvent) -> dict[str, JSON]:
    """``json`` when the data re-serialises to exactly the same text, else raw ``data``."""
    item: dict[str, JSON] = {"t": event.t}
    if event.event is not None:
        item["event"] = event.event
    try:
        parsed = json.loads(event.data)
        exact = _compact(parsed) == event.data
    except ValueError:
        exact = False
    if exact:
        item["json"] = parsed
    else:
        item["data"] = event.data
    return item


def _interaction_dict(ex: Exchange) -> dict[str, JSON]:
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
    response: dict[str, JSON] = {"status": resp.status, "headers": resp.headers}
    if isinstance(resp.body, str):
        response["text"] = resp.body
    elif resp.body is not None:
        response["body"] = resp.body
    if resp.events is not None:
        response["events"] = [_event_dict(e) for e in resp.events]
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
    out["start_ns"] = ex.start_ns
    out["end_ns"] = ex.end_ns
    return out


def to_json(cassette: Cassette) -> dict[str, JSON]:
    """The cassette as the JSON document ``dumps`` writes (fixed key order)."""
    return {
        "version": FORMAT_VERSION,
        "source": cassette.source,
        "interactions": [_interaction_dict(ex) for ex in cassette.interactions],
    }


_ITEM_PAD = "    "


def interaction_text(ex: Exchange) -> str:
    """One interaction's text as it reads in the cassette's list, two levels in.

    Raises ValueError when a value has no JSON form (NaN, infinity)."""
    item = _interaction_dict(ex)
    text = pretty(item, _ITEM_PAD)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escape this interaction, still lossless
        escaped = json.dumps(item, indent=2, ensure_ascii=True, allow_nan=False)
        text = escaped.replace("\n", "\n" + _ITEM_PAD)
    return text


def document(source: dict[str, JSON], texts: Iterable[str]) -> Iterator[str]:
    """The pieces of a cassette file: the head, each interaction's text (from
    :func:`interaction_text`) in order, and the close. ``dumps`` joins them; a streaming
    writer writes them one at a time."""
    head_doc = {"version": FORMAT_VERSION, "source": source}
    head = json.dumps(head_doc, indent=2, ensure_ascii=False, allow_nan=False)
    try:
        head.encode("utf-8")
    except UnicodeEncodeError:
        head = json.dumps(head_doc, indent=2, ensure_ascii=True, allow_nan=False)
    yield head[:-2] + ',\n  "interactions": '
    opener = "[\n" + _ITEM_PAD
    for text in texts:
        yield opener + text
        opener = ",\n" + _ITEM_PAD
    yield "[]\n}\n" if opener.startswith("[") else "\n  ]\n}\n"


def dumps(cassette: Cassette) -> str:
    """Pretty-printed (indent 2), stably ordered JSON text with a trailing newline: the
    text of ``json.dumps(to_json(cassette), indent=2, ensure_ascii=False)``, written
    faster (see ``jsontext``). An interaction holding a lone surrogate, which UTF-8 cannot
    carry, is written with every non-ASCII character escaped.

    Raises ValueError when a value has no JSON form (NaN, infinity).
    """
    texts = [interaction_text(ex) for ex in cassette.interactions]
    return "".join(document(cassette.source, texts))


# --- migrations -----------------------------------------------------------------------


def convert_0_to_1(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 0 (unversioned) kept ``exchanges`` and top-level ``command`` /
    ``recorded_at``; version 1 names the list ``interactions`` and groups provenance
    under ``source``."""
    out: dict[str, Any] = {"version": 1}
    source = doc.get("source")
    source = dict(source) if isinstance(source, dict) else {}
    for key in ("command", "recorded_at"):
        if key in doc:
            source.setdefault(key, doc[key])
    out["source"] = source
    out["interactions"] = doc.get("exchanges", doc.get("interactions", []))
    return out


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: convert_0_to_1}
"""``MIGRATIONS[n]`` converts a version-``n`` document to version ``n + 1``."""


def _version(doc: dict[str, Any], path: str) -> int:
    if "version" not in doc:
        if "exchanges" in doc:
            return 0
        raise CassetteError(path, "version", "missing (is this an otel-replay cassette?)")
    version = doc["version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise CassetteError(path, "version", f"expected a non-negative integer, got {version!r}")
    if version > FORMAT_VERSION:
        raise CassetteVersionError(path, version, FORMAT_VERSION)
    return version


def migrate(doc: dict[str, Any], path: str = "<string>") -> dict[str, Any]:
    """The document converted, step by step, to ``FORMAT_VERSION``."""
    version = _version(doc, path)
    while version < FORMAT_VERSION:
        doc = MIGRATIONS[version](doc)
        version += 1
    return doc


# --- decoding -------------------------------------------------------------------------

_TOP_KEYS = frozenset({"version", "source", "interactions"})


class Problem(Exception):
    """A schema problem at a place in the document (becomes a CassetteError)."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(where, problem)
        self.where = where
        self.problem = problem


_TYPE_NAMES: dict[str, str] = {
    "str": "a string",
    "int": "an integer",
    "number": "a number",
    "bool": "a boolean",
    "dict": "an object",
    "list": "an array",
    "null": "null",
}


def _kind_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "number"
    return type(value).__name__


def _check(value: object, where: str, *kinds: str) -> Any:
    kind = _kind_of(value)
    if kind in kinds or (kind == "int" and "number" in kinds):
        return value
    wanted = " or ".join(_TYPE_NAMES[k] for k in kinds)
    got = _TYPE_NAMES.get(kind, kind)
    raise Problem(where, f"expected {wanted}, got {got}")


class _Obj:
    """Typed field access on one JSON object, tracking its path and unknown keys."""

    def __init__(self, value: object, where: str, keys: frozenset[str]) -> None:
        self.data: dict[str, Any] = _check(value, where, "dict")
        self.where = where
        for key in self.data:
            if key not in keys:
                raise Problem(f"{where}.{key}", "unknown field")

    def req(self, key: str, *kinds: str) -> Any:
        if key not in self.data:
            raise Problem(f"{self.where}.{key}", "missing")
        return _check(self.data[key], f"{self.where}.{key}", *kinds)

    def opt(self, key: str, default: Any, *kinds: str) -> Any:
        if key not in self.data:
            return default
        return _check(self.data[key], f"{self.where}.{key}", *kinds)


_INTERACTION_KEYS = frozenset(
    "provider operation method request raw_request stream response trace_id span_id"
    " parent_span_id source start_ns end_ns".split()
)
_REQUEST_KEYS = frozenset({*COMPONENTS, "known"})
_RESPONSE_KEYS = frozenset({"status", "headers", "body", "text", "events", "fault"})
_EVENT_KEYS = frozenset({"t", "event", "json", "data"})


def _decode_request(value: object, where: str) -> CanonicalRequest:
    obj = _Obj(value, where, _REQUEST_KEYS)
    known: frozenset[str] = ALL_KNOWN
    if "known" in obj.data:
        names = obj.req("known", "list")
        for i, name in enumerate(names):
            if name not in ALL_KNOWN:
                raise Problem(f"{where}.known[{i}]", f"not a component: {name!r}")
        known = frozenset(names)
    return CanonicalRequest(
        endpoint=obj.req("endpoint", "str"),
        model=obj.opt("model", None, "str", "null"),
        system=obj.opt("system", None, "list", "null"),
        messages=obj.opt("messages", None, "list", "null"),
        tools=obj.opt("tools", None, "list", "null"),
        params=obj.opt("params", {}, "dict"),
        known=known,
    )


def _decode_event(value: object, where: str) -> SSEEvent:
    obj = _Obj(value, where, _EVENT_KEYS)
    if ("json" in obj.data) == ("data" in obj.data):
        raise Problem(where, "needs exactly one of 'json' and 'data'")
    data = obj.req("data", "str") if "data" in obj.data else _compact(obj.data["json"])
    return SSEEvent(data=data, event=obj.opt("event", None, "str"), t=float(obj.req("t", "number")))


def _decode_response(value: object, where: str) -> Response:
    obj = _Obj(value, where, _RESPONSE_KEYS)
    if "body" in obj.data and "text" in obj.data:
        raise Problem(where, "has both 'body' and 'text'")
    body = obj.req("text", "str") if "text" in obj.data else obj.data.get("body")
    events = obj.opt("events", None, "list")
    headers = obj.opt("headers", {}, "dict")
    for name, header in headers.items():
        _check(header, f"{where}.headers.{name}", "str")
    return Response(
        status=obj.req("status", "int"),
        headers=headers,
        body=body,
        events=None
        if events is None
        else [_decode_event(e, f"{where}.events[{i}]") for i, e in enumerate(events)],
        fault=obj.opt("fault", None, "str"),
    )


def decode_interaction(value: object, where: str) -> Exchange:
    """One interaction, with every field type-checked; raises Problem naming the place."""
    obj = _Obj(value, where, _INTERACTION_KEYS)
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
    )


def from_json(doc: JSON, path: str = "<string>") -> Cassette:
    """A Cassette from a parsed document of any supported version."""
    if not isinstance(doc, dict):
        raise CassetteError(path, "", "expected a JSON object at the top level")
    doc = migrate(doc, path)
    try:
        for key in doc:
            if key not in _TOP_KEYS:
                raise Problem(key, "unknown field")
        source = doc.get("source", {})
        if not isinstance(source, dict):
            raise Problem("source", "expected an object")
        items = doc.get("interactions")
        if not isinstance(items, list):
            raise Problem("interactions", "expected an array")
        interactions = [
            decode_interaction(item, f"interactions[{i}]") for i, item in enumerate(items)
        ]
    except Problem as problem:
        raise CassetteError(path, problem.where, problem.problem) from None
    return Cassette(interactions=interactions, source=source)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


_GC_PAUSE_CHARS = 1 << 20


def loads(text: str, path: str = "<string>") -> Cassette:
    """Parse cassette text; errors name ``path`` and the line or field.

    The cyclic GC is paused while a large cassette (over 1 M characters) is decoded: the
    decoded objects hold no cycles, and the full collections their number triggers made
    loading slower per interaction as the cassette grew."""
    with paused_gc(len(text) > _GC_PAUSE_CHARS):
        return _loads(text, path)


def _loads(text: str, path: str) -> Cassette:
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise CassetteError(
            path, f"line {exc.lineno}", f"invalid JSON: {exc.msg} (column {exc.colno})"
        ) from None
    except ValueError as exc:
        raise CassetteError(path, "", f"invalid JSON: {exc}") from None
    return from_json(doc, path)


# --- I/O ------------------------------------------------------------------------------


def load(path: str | os.PathLike[str]) -> Cassette:
    """Read a cassette file. A missing or unreadable file is a CassetteError too."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CassetteError(path, "", "not UTF-8 text") from None
    except OSError as exc:
        raise CassetteError(path, "", f"cannot read: {exc.strerror or exc}") from None
    return loads(text, str(path))


def dump(cassette: Cassette, path: str | os.PathLike[str]) -> None:
    """Write a cassette crash-safely (see :func:`write_atomic`); on any failure the old
    file is untouched."""
    try:
        text = dumps(cassette)
    except ValueError as exc:
        raise CassetteError(path, "", f"cannot write: {exc}") from None
    try:
        write_atomic(Path(path), text)
    except OSError as exc:
        raise CassetteError(path, "", f"cannot write: {exc.strerror or exc}") from None


def write_atomic(target: Path, text: str) -> None:
    """A temporary file in the same directory, fsync, then an atomic rename over
    ``target`` (keeping its permissions). Raises ``OSError``; the old file stays intact."""
    with atomic_text(target) as handle:
        handle.write(text)


@contextmanager
def atomic_text(target: Path) -> Iterator[TextIO]:
    """A text handle whose content replaces ``target`` atomically when the block ends
    without an exception (see :func:`write_atomic`); on an exception nothing changes."""
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable where the platform allows it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
