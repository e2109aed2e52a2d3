"""Ignore paths: parsing ``params.metadata.user_id`` / ``messages[*].parts[0].id`` and
dropping what they name from a JSON value.

A path is dot-separated keys with ``[n]`` / ``[*]`` list indices; a key may hold ``*``
wildcards (``fnmatch``). The first key names a canonical request's component. When a
path goes on below a string that holds a JSON object or array, it continues inside that
document, which is written back as compact JSON with the named values left out. A
``when`` predicate, when given, limits what the last step drops to the values it accepts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from otel_replay.core.exchange import JSON
from otel_replay.core.memo import ListMap, shared_head

__all__ = ["Step", "drop_path", "dropper", "has_path", "parse_path"]

_TOKEN = re.compile(r"\.?([^.\[\]]+)|\[(\d+|\*)\]")


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a path: a dict key pattern, or a list index (None for ``[*]``)."""

    key: str | None = None
    index: int | None = None
    any_index: bool = False

    def keys(self, value: dict[str, JSON]) -> list[str]:
        key = self.key
        if key is None:
            return []
        if "*" not in key:
            return [key] if key in value else []
        return [k for k in value if isinstance(k, str) and fnmatchcase(k, key)]

    def indices(self, value: list[JSON]) -> list[int]:
        if self.key is not None:
            return []
        if self.any_index:
            return list(range(len(value)))
        assert self.index is not None
        return [self.index] if 0 <= self.index < len(value) else []


def parse_path(path: str) -> tuple[Step, ...]:
    """The steps of ``path``; ValueError names what cannot be read."""
    steps: list[Step] = []
    pos = 0
    while pos < len(path):
        found = _TOKEN.match(path, pos)
        if found is None or (found.group(1) is not None and pos > 0 and path[pos] != "."):
            raise ValueError(f"cannot read the path {path!r} at character {pos + 1}")
        key, index = found.group(1), found.group(2)
        if key is not None:
            steps.append(Step(key=key))
        elif index == "*":
            steps.append(Step(any_index=True))
        else:
            steps.append(Step(index=int(index)))
        pos = found.end()
    if not steps or steps[0].key is None:
        raise ValueError(f"the path {path!r} must start with a component name")
    return tuple(steps)


Predicate = Callable[[JSON], bool]


def drop_path(value: JSON, steps: tuple[Step, ...], when: Predicate | None = None) -> JSON:
    """``value`` without what ``steps`` name (only the values ``when`` accepts, when
    given); the same object when nothing is dropped."""
    if not steps:
        return value
    if isinstance(value, str):
        return _drop_in_text(value, steps, when)
    step, rest = steps[0], steps[1:]
    if type(value) is dict and step.key is not None and "*" not in step.key:  # most paths
        key = step.key
        if key not in value:
            return value
        inner = value[key]
        if rest:
            inner = drop_path(inner, rest, when)
            if inner is value[key]:
                return value
        elif when is not None and not when(inner):
            return value
        out = dict(value)
        if rest:
            out[key] = inner
        else:
            del out[key]
        return out
    if type(value) is list and step.any_index and rest:  # every item, each on down
        copied: list[JSON] | None = None
        for i, item in enumerate(value):
            new = drop_path(item, rest, when)
            if new is not item:
                if copied is None:
                    copied = list(value)
                copied[i] = new
        return value if copied is None else copied
    if isinstance(value, dict):
        keys = step.keys(value)
        if when is not None and not rest:
            keys = [k for k in keys if when(value[k])]
        if not keys:
            return value
        if not rest:
            return {k: v for k, v in value.items() if k not in keys}
        return _replace(value, {k: drop_path(value[k], rest, when) for k in keys})
    if isinstance(value, list):
        indices = step.indices(value)
        if when is not None and not rest:
            indices = [i for i in indices if when(value[i])]
        if not indices:
            return value
        if not rest:
            gone = set(indices)
            return [v for i, v in enumerate(value) if i not in gone]
        changed = {i: drop_path(value[i], rest, when) for i in indices}
        if all(changed[i] is value[i] for i in indices):
            return value
        return [changed.get(i, v) for i, v in enumerate(value)]
    return value


def dropper(steps: tuple[Step, ...], when: Predicate | None = None) -> Callable[[JSON], JSON]:
    """``drop_path(value, steps, when)`` as a function of ``value``. Where the path goes
    through every item of a list and on into each (``messages[*].parts[*]``), each item's
    result is remembered by identity, and the head of the list that is last call's taken
    whole (``core.memo.ListMap``): a conversation resends its earlier
    messages as the very same objects every turn, so a request costs the walk of its new
    messages, not of all it resends (``tests/test_rules_engine.py`` holds the two equal)."""
    if len(steps) < 2 or not steps[0].any_index:
        return lambda value: drop_path(value, steps, when)
    rest = steps[1:]
    each: ListMap[JSON, JSON] = ListMap(lambda item: drop_path(item, rest, when), 1 << 14)

    def drop(value: JSON) -> JSON:
        if type(value) is not list:
            return drop_path(value, steps, when)
        kept = each(value)
        if shared_head(kept, value) == len(value):
            return value
        return kept

    return drop


def _replace(value: dict[str, JSON], changed: dict[str, JSON]) -> dict[str, JSON]:
    if all(changed[k] is value[k] for k in changed):
        return value
    return {k: changed.get(k, v) for k, v in value.items()}


def _drop_in_text(text: str, steps: tuple[Step, ...], when: Predicate | None) -> JSON:
    found = _DROPPED.get((text, steps, when))
    if found is not None:
        return found
    document = _document(text)
    kept: JSON = text
    if document is not None:
        dropped = drop_path(document, steps, when)
        if dropped is not document:
            kept = json.dumps(dropped, separators=(",", ":"), ensure_ascii=False)
    _remember(_DROPPED, (text, steps, when), kept, text)
    return kept


def _document(text: str) -> JSON | None:
    """The JSON document (object or array) a string holds, None when it holds none. A
    short one is remembered, as an agent sends the same such text every turn (Claude
    Code's ``metadata.user_id``); the document is shared, and nothing changes it."""
    if text in _DOCUMENTS:
        return _DOCUMENTS[text]
    document: JSON | None = None
    if text.lstrip()[:1] in ("{", "["):
        try:
            document = json.loads(text)
        except ValueError:
            document = None
    _remember(_DOCUMENTS, text, document, text)
    return document


def _remember(memo: dict[Any, Any], key: object, value: object, text: str) -> None:
    if len(text) <= _TEXT_MAX_LENGTH:
        if len(memo) >= _TEXTS_MAX:
            memo.clear()
        memo[key] = value


_TEXT_MAX_LENGTH = 4096
_TEXTS_MAX = 1024
"""JSON texts (of at most ``_TEXT_MAX_LENGTH`` characters) whose documents, and what each
path leaves of them, are remembered at most."""
_DOCUMENTS: dict[str, JSON | None] = {}
_DROPPED: dict[tuple[str, tuple[Step, ...], Predicate | None], JSON] = {}


def has_path(value: JSON, steps: tuple[Step, ...]) -> bool:
    """Whether ``steps`` name anything in ``value`` (going into JSON carried as text)."""
    if not steps:
        return True
    if isinstance(value, str):
        document = _document(value)
        return document is not None and has_path(document, steps)
    step, rest = steps[0], steps[1:]
    if isinstance(value, dict):
        return any(has_path(value[k], rest) for k in step.keys(value))
    if isinstance(value, list):
        return any(has_path(value[i], rest) for i in step.indices(value))
    return False
