"""A conversation's next turn matched from its last one, by what it adds.

An agent's next request is its last one with messages added (and, for Claude Code, its
last message sent again without the cache marker): the same system prompt, tools and
parameters, byte for byte. When the last request's normal form was a recording's, the
next one's is a recording's exactly when that recording is the same with the same
messages added, up to the volatile values. So a turn is matched by comparing only what it
adds, not by normalising and hashing all it resends.

Why that is the same answer. Two requests have the same normal form when their messages
and other components are the same with each volatile value standing where the other's
stands, the values paired one to one (the placeholders number values by first
occurrence, so any one-to-one pairing gives equal numbers). The last request ``P`` and
recording ``R`` are so paired (``values``: each of ``P``'s values to ``R``'s, read off
their two numberings once their normal forms are found equal). The next request is ``P``
with messages ``A`` after its first ``kept``; recording ``C`` is ``R`` with messages ``B``
after the same ``kept`` (the same objects, and every other component equal). When ``A``
and ``B`` walk alike (``ItemRuns.template``: the same text with each value's place and
kind) and their values extend the pairing one to one, the next request and ``C`` are so
paired: their normal forms are equal, and ``match`` would take what it takes for ``C``
(``Matcher.take_equal``). What cannot be shown so (another message changed, a value
paired two ways, a rule that reads the messages as a whole) goes to the full matcher.
``tests/test_continuation.py`` holds the two equal over whole sessions.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, fields

from otel_replay.core.exchange import JSON, CanonicalRequest
from otel_replay.core.memo import shared_head
from otel_replay.matching.matcher import Matcher
from otel_replay.matching.numbering import Numbering, ValueTemplate
from otel_replay.matching.ruleset import RuleSet

__all__ = ["Continuations"]

AHEAD = 8
"""Recordings after the last one matched that a turn is tried against (then that one
itself, for a request sent again)."""
_OTHER = tuple(f.name for f in fields(CanonicalRequest) if f.name != "messages")

Droppers = tuple[Callable[[JSON], JSON], ...]


@dataclass(frozen=True, slots=True)
class _Rules:
    """What normalises one side's messages one by one."""

    rules: RuleSet
    droppers: Droppers

    def templates(self, messages: Sequence[JSON]) -> list[ValueTemplate]:
        items: JSON = list(messages)
        for drop in self.droppers:
            items = drop(items)
        assert isinstance(items, list)
        return [self.rules.runs.template(item) for item in items]


@dataclass(frozen=True, slots=True)
class _Link:
    """A live request paired with recording ``index``: their values, paired."""

    index: int
    live: _Rules
    recorded: _Rules
    values: dict[str, str]  # the live request's value -> the recording's
    taken: frozenset[str]  # the recording's values paired


@dataclass(frozen=True, slots=True)
class _Matched:
    """A live request the full matcher took recording ``index`` for (paired on demand)."""

    request: CanonicalRequest
    index: int


class Continuations:
    """Turns matched from the last one, per conversation ``key`` (the caller's: a
    provider and path). ``recorded(i)`` is recording ``i``'s canonical request."""

    def __init__(self, matcher: Matcher, recorded: Callable[[int], CanonicalRequest]) -> None:
        self.matcher = matcher
        self._recorded = recorded
        self._last: dict[Hashable, _Link | _Matched] = {}

    def matched(self, key: Hashable, request: CanonicalRequest, index: int) -> None:
        """The full matcher took recording ``index`` for ``request``."""
        self._last[key] = _Matched(request, index)

    def forget(self, key: Hashable) -> None:
        self._last.pop(key, None)

    def follow(
        self, key: Hashable, kept: int, added: list[JSON], accept: Callable[[int], bool]
    ) -> int | None:
        """Consumes and returns the recording ``match`` takes for the last request under
        ``key`` with its messages after the first ``kept`` replaced by ``added``
        (canonical messages), when ``accept`` takes it; None when this cannot show which
        (the full matcher decides)."""
        link = self._link(key)
        if link is None:
            return None
        last = self._recorded(link.index)
        if type(last.messages) is not list or kept > len(last.messages):
            return None
        mine = link.live.templates(added)
        count = kept + len(added)
        ahead = range(link.index + 1, min(link.index + 1 + AHEAD, len(self.matcher)))
        for index in (*ahead, link.index):
            other = self._recorded(index)
            messages = other.messages
            if (
                type(messages) is not list
                or len(messages) != count
                or not _same_but_messages(other, last)
                or shared_head(messages, last.messages) < kept
            ):
                continue
            paired = _paired(link, mine, link.recorded.templates(messages[kept:]))
            if paired is None:
                continue
            found = self.matcher.take_equal(index, accept)
            if found is None:
                self._last.pop(key, None)
                return None
            values, taken = paired
            self._last[key] = _Link(index, link.live, link.recorded, values, taken)
            return found
        self._last.pop(key, None)
        return None

    def prepare(self, key: Hashable) -> None:
        """Makes ahead what the next turn under ``key`` needs of the recordings: the last
        match paired (a full match's, once), and the templates of the messages the next
        recording adds (those after all but the last recorded one, which Claude Code
        sends again changed). ``follow`` gives the same answer with or without it, only
        sooner: a caller runs it once a turn is answered, while the agent reads it."""
        link = self._link(key)
        if link is None:
            return
        last = self._recorded(link.index).messages
        if type(last) is not list or link.index + 1 >= len(self.matcher):
            return
        messages = self._recorded(link.index + 1).messages
        if type(messages) is list and len(messages) > len(last):
            link.recorded.templates(messages[max(len(last) - 1, 0) :])

    def _link(self, key: Hashable) -> _Link | None:
        last = self._last.get(key)
        if last is None or isinstance(last, _Link):
            return last
        link = self._pair(last.request, last.index)
        if link is None:
            del self._last[key]
        else:
            self._last[key] = link
        return link

    def _pair(self, request: CanonicalRequest, index: int) -> _Link | None:
        """``request`` paired with recording ``index``, when their normal forms are equal
        and their messages are normalised one by one."""
        matcher, recording = self.matcher, self._recorded(index)
        live_rules = matcher.normalizer.item_rules(request)
        recorded_rules = matcher.recorded_by.item_rules(recording)
        if live_rules is None or recorded_rules is None:
            return None
        live, recorded = Numbering(), Numbering()
        if matcher.normalizer.normalize(request, live) != matcher.normal(index):
            return None
        matcher.recorded_by.normalize(recording, recorded)
        theirs = {placeholder: value for value, placeholder in recorded.seen.items()}
        values: dict[str, str] = {}
        for value, placeholder in live.seen.items():
            found = theirs.get(placeholder)
            if found is None:
                return None
            values[value] = found
        return _Link(
            index, _Rules(*live_rules), _Rules(*recorded_rules), values, frozenset(values.values())
        )


def _same_but_messages(a: CanonicalRequest, b: CanonicalRequest) -> bool:
    return a is b or all(
        getattr(a, name) is getattr(b, name) or getattr(a, name) == getattr(b, name)
        for name in _OTHER
    )


def _paired(
    link: _Link, mine: list[ValueTemplate], theirs: list[ValueTemplate]
) -> tuple[dict[str, str], frozenset[str]] | None:
    """The pairing extended by messages that walk alike, None when they do not or a
    value would be paired two ways."""
    if len(mine) != len(theirs):
        return None
    values, taken = link.values, link.taken
    added: dict[str, str] = {}
    added_taken: set[str] = set()
    for one, other in zip(mine, theirs, strict=True):
        if one is not other and (one.value != other.value or len(one.calls) != len(other.calls)):
            return None
        for (kind, value), (their_kind, their_value) in zip(one.calls, other.calls, strict=True):
            if kind != their_kind:
                return None
            paired = values.get(value) or added.get(value)
            if paired is None:
                if their_value in taken or their_value in added_taken:
                    return None
                added[value] = their_value
                added_taken.add(their_value)
            elif paired != their_value:
                return None
    if not added:
        return values, taken
    return {**values, **added}, taken | added_taken
