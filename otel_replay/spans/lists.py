"""Lists and objects stored once per trace file: the encoder's side (``readers.pieces``
reads them back).

Long strings are pieces (``spans.pieces``), but what a coding agent resends every turn
is mostly structure: each earlier message's keys, roles, ids and short texts, and its
whole tool list, hundreds of short descriptions. Here a list field of the exact body
(``messages``, ``tools``, ``system``, ``input``...) whose first items are those of a list
an earlier span of the file wrote is written as a marker standing for them, then its new
items; an object field (a request's metadata) that an earlier span wrote is written as
a marker standing for it: each span's template holds what is new in it.

Each list is known by the ids of its prefixes: the first ``j`` items' id is a hash of the
first ``j - 1`` items' id and of the ``j``-th item's exact JSON text, worked out once per
item object (a conversation resends its earlier messages as the very same objects,
``core.memo``), so a request costs a lookup per item it resends. The index maps the id
of every prefix written to the list that holds it; a span's list is the longest prefix
found there, then its own items.

The GenAI tool definitions of a span whose tool list an earlier span of the file wrote in
full hold each tool's ``type`` and ``name`` only, as the conventions write them by default
(a tool's ``description`` and ``parameters`` are "NOT RECOMMENDED to be populated by
default"): every reader of the conventions still reads a list of tools, and the first
span holds them whole.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from otel_replay.core.exchange import JSON
from otel_replay.core.jsontext import value_text
from otel_replay.core.memo import IdentityMemo
from otel_replay.spans.attributes import PIECE_MARKER

__all__ = ["ListIndex", "ListPlan", "chain", "names_only"]

MIN_LIST = 128
"""A list prefix shorter than this (as JSON text) is written in place: its reference would
cost as much."""
_MAX_ENTRIES = 1 << 18  # prefixes remembered; beyond, the index starts afresh
_LIMIT = 1 << 16


def _weighed(item: Any) -> tuple[bytes, int]:
    text = value_text(item).encode("utf-8", "surrogatepass")
    return hashlib.sha256(text).digest()[:12], len(text) + 1


def _weight(found: tuple[bytes, int]) -> int:
    return found[1]


_BUDGET = 64 * 1024 * 1024
_item = IdentityMemo(_weighed, 1 << 14, weigh=_weight, budget=_BUDGET)
"""An item's digest and the length of its text (and a comma): per object (the objects
remembered, kept alive by the memo, hold at most about as much text as the budget)."""


class _Chain:
    """The prefix ids of lists, each step remembered per item object and the id before
    (the items remembered, kept alive here, hold at most about ``_BUDGET`` of text)."""

    __slots__ = ("_after", "_weight")

    def __init__(self) -> None:
        self._after: dict[tuple[int, bytes], tuple[object, bytes, int]] = {}
        self._weight = 0

    def __call__(self, items: list[Any]) -> tuple[list[bytes], list[int]]:
        """The id of each prefix of ``items``, and its length as JSON text."""
        after = self._after
        ids: list[bytes] = []
        sizes: list[int] = []
        before, size = b"", 1
        for item in items:
            step = after.get((id(item), before))
            if step is None or step[0] is not item:
                digest, weight = _item(item)
                if len(after) >= _LIMIT or self._weight + weight > _BUDGET:
                    after.clear()
                    self._weight = 0
                self._weight += weight
                step = (item, hashlib.sha256(before + digest).digest()[:12], weight)
                after[(id(item), before)] = step
            before = step[1]
            size += step[2]
            ids.append(before)
            sizes.append(size)
        return ids, sizes


chain = _Chain()


def _object_id(value: Any) -> bytes:
    """An object field's id (apart from any list's: an object is not a list of one)."""
    return hashlib.sha256(b"{" + _item(value)[0]).digest()[:12]


@dataclass(slots=True)
class ListPlan:
    """How a body's list and object fields are written: ``splices``, the fields whose
    first items are an earlier list's (field, that list's id, how many; None: the whole
    field is an earlier object); ``owns``, the fields written as lists or objects of their
    own (field, id, prefix ids, how many items came from earlier)."""

    splices: dict[str, tuple[bytes, int | None]] = field(default_factory=dict)
    owns: list[tuple[str, bytes, list[bytes], int]] = field(default_factory=list)

    def key(self) -> list[tuple[str, bytes, int | None]]:
        """What decides the template: each field's splice."""
        return [(name, *found) for name, found in self.splices.items()]

    def template(self, body: JSON) -> JSON:
        """``body`` with each spliced field's first items as one marker."""
        if not self.splices or type(body) is not dict:
            return body
        out = dict(body)
        for name, (source, count) in self.splices.items():
            marker = PIECE_MARKER + source.hex()
            out[name] = marker if count is None else [marker, *body[name][count:]]
        return out

    def entries(self) -> list[list[Any]]:
        """``[[field], own id or None, earlier id or None, count]`` per field (count None
        for an object): the fields made known only, then those referring to earlier ones
        (the ``otel_replay.request.lists`` attribute)."""
        owned = {name: (own, ids) for name, own, ids, _ in self.owns}
        names = [n for n in owned if n not in self.splices] + list(self.splices)
        rows = []
        for name in names:
            own, ids = owned.get(name, (None, []))
            source, count = self.splices.get(name, (None, None if not ids else 0))
            rows.append(
                [[name], own.hex() if own else None, source.hex() if source else None, count]
            )
        return rows


class ListIndex:
    """The lists one trace file holds (written by one store), and those of the span being
    encoded (``pending``), committed with its pieces (``spans.pieces.Ledger``)."""

    __slots__ = ("_pending", "_tools", "_written", "tools_pending")

    def __init__(self) -> None:
        self._written: dict[bytes, tuple[bytes, int]] = {}
        self._tools: set[bytes] = set()
        self._pending: list[tuple[bytes, list[bytes], int]] = []
        self.tools_pending: bytes | None = None

    def fork(self) -> ListIndex:
        """An index reading what this one's file holds, for drafting a span ahead."""
        fork = ListIndex()
        fork._written, fork._tools = self._written, self._tools
        return fork

    def plan(self, body: JSON) -> ListPlan:
        """The lists of ``body``'s fields, against what the file holds."""
        plan = ListPlan()
        if type(body) is not dict:
            return plan
        written = self._written
        for name, value in body.items():
            if type(value) is dict and value:
                self._plan_object(plan, name, value)
                continue
            if type(value) is not list or not value:
                continue
            ids, sizes = chain(value)
            count = len(ids)
            while count and ids[count - 1] not in written:
                count -= 1
            if count and sizes[count - 1] >= MIN_LIST:
                plan.splices[name] = (written[ids[count - 1]][0], count)
            else:
                count = 0
            if count < len(ids) and sizes[-1] >= MIN_LIST:
                plan.owns.append((name, ids[-1], ids, count))
        return plan

    def _plan_object(self, plan: ListPlan, name: str, value: dict[str, Any]) -> None:
        """An object field: by reference when an earlier span wrote the same object."""
        if _item(value)[1] < MIN_LIST:
            return
        own = _object_id(value)
        found = self._written.get(own)
        if found is not None:
            plan.splices[name] = (found[0], None)
        else:
            plan.owns.append((name, own, [], 0))

    def take(self, plan: ListPlan) -> None:
        """The lists ``plan`` writes are this span's, stored with it."""
        self._pending = [(own, ids, count) for _, own, ids, count in plan.owns]

    def tool_view(self, tools: JSON) -> tuple[JSON, bool]:
        """The GenAI tool definitions to write for ``tools``: names only when the file
        holds them whole (True), else ``tools`` (whose id is then pending)."""
        self.tools_pending = None
        if type(tools) is not list or not tools:
            return tools, False
        ids, _ = chain(tools)
        if ids[-1] in self._tools:
            return names_only(tools), True
        self.tools_pending = ids[-1]
        return tools, False

    def drop(self) -> None:
        self._pending = []
        self.tools_pending = None

    def commit(self) -> None:
        written = self._written
        for own, ids, count in self._pending:
            if len(written) + len(ids) >= _MAX_ENTRIES:
                written.clear()
                self._tools.clear()
                count = 0
            if not ids:  # an object
                written[own] = (own, 0)
            for j in range(count, len(ids)):
                written[ids[j]] = (own, j + 1)
        if self.tools_pending is not None:
            self._tools.add(self.tools_pending)
        self.drop()


def names_only(tools: list[JSON]) -> list[JSON]:
    """Each tool's ``type`` and ``name`` (a tool without either is kept whole)."""
    short: list[JSON] = []
    for tool in tools:
        if type(tool) is dict and ("name" in tool or "type" in tool):
            short.append({k: tool[k] for k in ("type", "name") if k in tool})
        else:
            short.append(tool)
    return short
