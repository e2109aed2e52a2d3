"""``json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)``, faster.

With ``indent`` set, the standard library encodes in pure Python, one generator step per
value; a 10,000-interaction cassette took about two seconds. ``pretty`` writes the same
text with one loop per container and the C string escaper, and hands anything unusual
(non-string keys, tuples of odd types, NaN, unknown objects, cycles) to ``json.dumps``
itself, so its output and its errors are the standard library's.

One departure, asked for by the value itself: a :class:`LineItems` list is written one
item a line, each item as ``json.dumps(item)`` writes it (one line, ``", "`` and ``": "``
between its parts), so a long run of small records (a stream's events) reads one record
a line rather than several lines each.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

import orjson

__all__ = [
    "STRICT",
    "LineItems",
    "dumps_line",
    "encodes",
    "finite",
    "loads",
    "nulled_nan",
    "orjson_own",
    "orjson_text",
    "orjson_value_text",
    "otlp_line",
    "pretty",
    "strict_loads",
    "value_key",
    "value_text",
]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


STRICT = json.JSONDecoder(parse_constant=_no_constant)
"""The standard library's decoder, refusing ``NaN`` and the infinities (``ValueError``):
a body holding one is no JSON a cassette can carry, so it is kept as the text it is."""


def strict_loads(data: bytes | str) -> Any:
    """``json.loads(data)``, refusing ``NaN``, ``Infinity`` and ``-Infinity``."""
    if not isinstance(data, str):
        data = data.decode(json.detect_encoding(data), "surrogatepass")
    return STRICT.decode(data)


class _Fallback(Exception):
    """The value needs ``json.dumps`` itself."""


def _scalar(value: Any) -> str | None:
    """The JSON text of a plain scalar, or None for a container or anything else."""
    kind = type(value)
    if kind is str:
        text: str = encode_basestring(value)
        return text
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        if math.isnan(value) or math.isinf(value):
            raise _Fallback
        return float.__repr__(value)
    return None


class LineItems(list[Any]):
    """A list ``pretty`` writes one item a line: each item is ``json.dumps(item,
    ensure_ascii=False, allow_nan=False)``, on a line of its own at the list's depth.
    Anything else reads it as the list it is."""

    __slots__ = ()


_LINE = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
_LINE_ASCII = json.JSONEncoder(ensure_ascii=True, allow_nan=False)


def _line_items(items: list[Any], pad: str, line: json.JSONEncoder) -> str:
    if not items:
        return "[]"
    inner = pad + "  "
    between = ",\n" + inner
    return "[\n" + inner + between.join(map(line.encode, items)) + "\n" + pad + "]"


def _walk(value: Any, pad: str, put: Any) -> None:
    kind = type(value)
    if kind is dict:
        if not value:
            put("{}")
            return
        inner = pad + "  "
        opener = "{\n" + inner
        for key, item in value.items():
            if type(key) is not str:
                raise _Fallback
            text = _scalar(item)
            put(opener + encode_basestring(key) + ": ")
            opener = ",\n" + inner
            if text is None:
                _walk(item, inner, put)
            else:
                put(text)
        put("\n" + pad + "}")
    elif kind is list:
        if not value:
            put("[]")
            return
        inner = pad + "  "
        opener = "[\n" + inner
        for item in value:
            text = _scalar(item)
            put(opener)
            opener = ",\n" + inner
            if text is None:
                _walk(item, inner, put)
            else:
                put(text)
        put("\n" + pad + "]")
    elif kind is LineItems:
        put(_line_items(value, pad, _LINE))
    else:
        raise _Fallback


def pretty(value: Any, pad: str = "", *, ascii: bool = False) -> str:
    """The text of ``json.dumps(value, indent=2, ensure_ascii=ascii, allow_nan=False)``,
    each :class:`LineItems` list one item a line; with ``pad``, as it reads nested that
    deep (every line after the first indented)."""
    if ascii:
        return _reference(value, pad, True)
    parts: list[str] = []
    try:
        text = _scalar(value)
        if text is not None:
            return text
        _walk(value, pad, parts.append)
    except (_Fallback, RecursionError):
        return _reference(value, pad, False)
    return "".join(parts)


def _reference(value: Any, pad: str, ascii: bool) -> str:
    """``pretty``'s text by the standard library: containers of plain shape walked here
    (so a :class:`LineItems` among them is written one item a line), any other value by
    ``json.dumps`` itself, with its errors; a value nested too deeply to walk, or holding
    itself, wholly by ``json.dumps``."""
    try:
        return _standard(value, pad, ascii)
    except RecursionError:
        text = json.dumps(value, indent=2, ensure_ascii=ascii, allow_nan=False)
        return text.replace("\n", "\n" + pad) if pad else text


def _standard(value: Any, pad: str, ascii: bool) -> str:
    kind = type(value)
    if kind is LineItems:
        return _line_items(value, pad, _LINE_ASCII if ascii else _LINE)
    inner = pad + "  "
    if kind is list and value:
        texts = [_standard(item, inner, ascii) for item in value]
        return "[\n" + inner + (",\n" + inner).join(texts) + "\n" + pad + "]"
    if kind is dict and value and all(type(key) is str for key in value):
        key = encode_basestring_ascii if ascii else encode_basestring
        texts = [f"{key(k)}: {_standard(v, inner, ascii)}" for k, v in value.items()]
        return "{\n" + inner + (",\n" + inner).join(texts) + "\n" + pad + "}"
    text = json.dumps(value, indent=2, ensure_ascii=ascii, allow_nan=False)
    return text.replace("\n", "\n" + pad) if pad else text


def encodes(text: str) -> bool:
    """Whether UTF-8 can carry ``text`` (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def orjson_text(value: Any) -> bytes | None:
    """orjson's compact text of ``value`` (UTF-8, no spaces, strings escaped as the
    standard library escapes them with ``ensure_ascii=False``; NaN and the infinities as
    ``null``), or None where it refuses (a lone surrogate, an integer beyond 64 bits, a
    key that is not a string)."""
    try:
        return orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        return None


def orjson_own(run: bytes) -> list[tuple[Any, bytes]] | None:
    """The values of ``run``, JSON values separated by commas, each with its text, when
    ``run`` is exactly what orjson writes for them (what Codex and Claude Code send: compact,
    UTF-8, the standard escapes); None otherwise. Read so, in one pass of orjson, they are
    what the standard library reads: a text orjson wrote reads back as the value written
    (an integer orjson would read as a float, a repeated key, a space or an escape of its
    own is written otherwise, so the run is not orjson's own)."""
    try:
        values = orjson.loads(b"[" + run + b"]")
    except orjson.JSONDecodeError:
        return None
    texts = [orjson.dumps(value) for value in values]
    if not texts or b",".join(texts) != run:
        return None
    return list(zip(values, texts, strict=True))


def value_key(raw: bytes) -> bytes | None:
    """A key for the value the JSON text ``raw`` holds: orjson's text of it, keys sorted
    at every level. Two texts the standard library reads as values equal type for type
    (``1`` is not ``1.0``; key order, spaces, escapes and a number's spelling aside, as
    the matcher compares them) have equal keys, and only those. None where orjson would
    read another value (an integer of 19 digits or more, which it reads as a float) or
    refuses (NaN, a lone surrogate, not JSON)."""
    if _WIDE in raw.translate(_DIGITS):
        return None
    try:
        return orjson.dumps(orjson.loads(raw), option=orjson.OPT_SORT_KEYS)
    except orjson.JSONDecodeError:
        return None


_MAY_HOLD_FLOAT = (dict, list, float)


def finite(value: Any) -> bool:
    """Whether every float in ``value`` is finite (no NaN, no infinity): a walk of its
    containers, a few times cheaper than encoding it with the standard library."""
    stack = [value]
    isfinite = math.isfinite
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(v for v in item.values() if isinstance(v, _MAY_HOLD_FLOAT))
        elif kind is list:
            stack.extend(v for v in item if isinstance(v, _MAY_HOLD_FLOAT))
        elif isinstance(item, float) and not isfinite(item):
            return False
        elif isinstance(item, dict | list):  # a subclass: its items are walked alike
            stack.extend(item.values() if isinstance(item, dict) else item)
    return True


_DIGITS = bytes.maketrans(b"012345678", b"999999999")
_WIDE = b"9" * 19  # an integer this wide orjson would read as a float


def loads(text: str, fallback: Callable[[str], Any] = json.loads) -> Any:
    """``fallback(text)`` (by default ``json.loads``), by orjson where it reads the same
    value (several times faster on a stream's small events, a cassette's file): not where
    a number runs to 19 digits (orjson reads an integer beyond 64 bits as a float) nor
    where orjson refuses (NaN, a lone surrogate, nesting beyond its limit), which
    ``fallback`` reads or refuses with its own error."""
    if type(text) is str:
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: the standard library reads it
            return fallback(text)
        if _WIDE not in raw.translate(_DIGITS):
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError:
                pass
    return fallback(text)


_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)


def dumps_line(doc: Any) -> str:
    """A JSON value as one compact line, non-ASCII kept as UTF-8 text (``json.dumps``
    with these settings, without building an encoder per call)."""
    return _COMPACT.encode(doc)


def otlp_line(doc: Any) -> str:
    """``dumps_line`` of an OTLP JSON document, about ten times faster (orjson).

    Only for OTLP documents: their numbers are finite (a double that is not is written as
    the string ``"NaN"`` or ``"Infinity"``; a body is held as text), where orjson would
    write ``null``. What orjson refuses is encoded by the standard library."""
    text = orjson_text(doc)
    return _COMPACT.encode(doc) if text is None else text.decode("utf-8")


_BEFORE_TOKEN = frozenset(b":,[")


def value_text(value: Any) -> str:
    """``dumps_line`` of a JSON value (a body, a list of messages), by orjson where that
    writes the same values (``orjson_value_text``), else by the standard library."""
    text = orjson_value_text(value)
    return _COMPACT.encode(value) if text is None else text


def orjson_value_text(value: Any) -> str | None:
    """orjson's text of ``value`` where ``value_text`` takes it; None where the standard
    library writes it. orjson writes NaN and the infinities as ``null``: a text holding a
    ``null`` token whose value holds such a float is not taken (a walk of the value tells,
    when a token is there), nor is anything orjson refuses. orjson's text has no spaces,
    so a token follows ``:``, ``,`` or ``[`` or is the whole text; the word inside a
    string (a schema's ``"null"`` type) is not one."""
    text = orjson_text(value)
    if text is None or nulled_nan(text, value):
        return None
    return text.decode("utf-8")


def nulled_nan(text: bytes, value: Any) -> bool:
    """Whether orjson's ``text`` of ``value`` wrote a NaN or an infinity as ``null``: it
    holds a ``null`` token and ``value`` a float that is not finite."""
    at = text.find(b"null")  # the word is found at once; ``:``, ``,`` and ``[`` are common
    while at > 0 and text[at - 1] not in _BEFORE_TOKEN:
        at = text.find(b"null", at + 4)
    return at >= 0 and not finite(value)
