"""What a cassette value must be to go back on the wire, checked as the cassette loads.

A replayed response is written to the agent as recorded: its status line, its headers, its
server-sent events. A hand-edited or hostile cassette could otherwise send ``HTTP/1.1 -1``,
smuggle a header through a CR/LF, or inject an SSE field; each check here raises a
:class:`~otel_replay.cassette.fields.Problem` naming the place instead. Nested values are
bounded too: JSON deeper than ``MAX_DEPTH`` levels is refused before anything walks it.
"""

from __future__ import annotations

import re
from itertools import chain, compress

from otel_replay.cassette.fields import Problem
from otel_replay.core.exchange import JSON
from otel_replay.core.limits import CASSETTE_FRAME_DEPTH, MAX_BODY_DEPTH

__all__ = ["FAULTS", "MAX_DEPTH", "check_event", "check_headers", "check_status", "too_deep"]

FAULTS = frozenset({"timeout", "reset", "reset_mid_stream"})
"""The transport faults the gateway records and replays (see ``Response.fault``)."""

MAX_DEPTH = MAX_BODY_DEPTH + CASSETTE_FRAME_DEPTH
"""How deeply a cassette's JSON may nest: any body the gateway accepts, in its frame."""

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BREAKS = re.compile(r"[\r\n\x00]")


def check_status(status: int, fault: str | None, where: str) -> None:
    """A status from 100 to 599, or 0 for a fault before any response; a known fault."""
    if fault is not None and fault not in FAULTS:
        known = ", ".join(sorted(FAULTS))
        raise Problem(f"{where}.fault", f"unknown fault {fault!r} (known: {known})")
    if status == 0 and fault is not None:
        return
    if not 100 <= status <= 599:
        allowed = "100 to 599, or 0 with a fault"
        raise Problem(f"{where}.status", f"HTTP status {status} out of range ({allowed})")


def check_headers(headers: dict[str, str], where: str) -> None:
    """Header names are HTTP tokens; values hold no line break or NUL."""
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            raise Problem(f"{where}.headers", f"header name {name!r} is not an HTTP token")
        if _BREAKS.search(value):
            raise Problem(f"{where}.headers.{name}", "header value holds a CR, LF or NUL")


def check_event(event: str | None, data: str, t: float, where: str) -> None:
    """An event name on one line, data without CR or NUL (LF splits it into data lines),
    and a time offset that is not negative."""
    if event is not None and _BREAKS.search(event):
        raise Problem(f"{where}.event", "event name holds a CR, LF or NUL")
    if "\r" in data or "\x00" in data:
        raise Problem(f"{where}.data", "event data holds a CR or NUL")
    if t < 0:
        raise Problem(f"{where}.t", f"negative time offset {t!r}")


def too_deep(doc: JSON, limit: int = MAX_DEPTH) -> str | None:
    """The place of a value nested more than ``limit`` levels deep, or None. The first
    pass keeps no places, so a cassette within the limit costs one pass over its values."""
    if not _deeper_than(doc, limit):
        return None
    steps: list[str] = []
    value = doc
    while len(steps) < _PLACE_STEPS:
        need = limit - len(steps) - 1  # the levels the next step down still holds
        if isinstance(value, dict):
            key = next(k for k, v in value.items() if _deeper_than(v, need))
            steps.append(f".{key}" if steps else key)
            value = value[key]
        elif isinstance(value, list):
            i = next(i for i, v in enumerate(value) if _deeper_than(v, need))
            steps.append(f"[{i}]")
            value = value[i]
        else:  # not reached: a value deeper than the limit is an array or object
            break
    return "".join(steps) + "..."


_PLACE_STEPS = 3


def _deeper_than(value: JSON, levels: int) -> bool:
    """Whether ``value`` nests more than ``levels`` arrays and objects inside each other.

    One level at a time, each gathered by C-level iteration: a quarter of the time that
    parsing the text takes, where a walk value by value took about as long as the parse."""
    level: list[JSON] = [value]
    for _ in range(levels):
        objects = [v for v in level if type(v) is dict]
        arrays = [v for v in level if type(v) is list]
        items = chain(chain.from_iterable(map(dict.values, objects)), chain.from_iterable(arrays))
        children = list(items)
        level = list(compress(children, map(_CONTAINERS.__contains__, map(type, children))))
        if not level:
            return False
    return any(type(v) is dict or type(v) is list for v in level)


_CONTAINERS = frozenset({dict, list})
