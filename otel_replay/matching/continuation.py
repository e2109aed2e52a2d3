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
    taken: set[str]  # the recording's values paired (both grow as turns are followed)


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
        # per key, made ahead: (the last recording, the next one, how many of the last
        # one's messages the next one begins with when all else is the same, else -1)
        self._ahead: dict[Hashable, tuple[int, int, int]] = {}

    def matched(self, key: Hashable, request: CanonicalRequest, index: int) -> None:
        """The full matcher took recording ``index`` for ``request``."""
        self._last[key] = _Matched(request, index)

    def forget(self, key: Hashable) -> None:
        self._last.pop(key, None)
        self._ahead.pop(key, None)

    def follow(
        self, key: Hashable, kept: int, added: list[JSON], accept: Callable[[int], bool]
    ) -> int | None:
        """Consumes and returns the recording ``match`` takes for the last request under
        ``key`` with its messages after the first ``kept`` replaced by ``added``
        (canonical messages), when ``accept`` takes it; None when this cannot show which
        (the full matcher decides)."""
        link, made = self._link(key), self._ahead.pop(key, None)
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
            if type(messages) is not list or len(messages) != count:
                continue
            if made is not None and made[:2] == (link.index, index):
                head = made[2]
            else:
                head = _head(other, last)
            if head < kept:
                continue
            added_values = _paired(link, mine, link.recorded.templates(messages[kept:]))
            if added_values is None:
                continue
            found = self.matcher.take_equal(index, accept)
            if found is None:
                self._last.pop(key, None)
                return None
            link.values.update(added_values)  # the last link's own: it is left behind
            link.taken.update(added_values.values())
            self._last[key] = _Link(index, link.live, link.recorded, link.values, link.taken)
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
        last = self._recorded(link.index)
        if type(last.messages) is not list or link.index + 1 >= len(self.matcher):
            return
        following = self._recorded(link.index + 1)
        messages = following.messages
        if type(messages) is list and len(messages) > len(last.messages):
            self._ahead[key] = (link.index, link.index + 1, _head(following, last))
            link.recorded.templates(messages[max(len(last.messages) - 1, 0) :])

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
            index, _Rules(*live_rules), _Rules(*recorded_rules), values, set(values.values())
        )


def _same_but_messages(a: CanonicalRequest, b: CanonicalRequest) -> bool:
    return a is b or all(
        getattr(a, name) is getattr(b, name) or getattr(a, name) == getattr(b, name)
        for name in _OTHER
    )


def _head(request: CanonicalRequest, last: CanonicalRequest) -> int:
    """How many of ``last``'s messages ``request``'s begin with, when all but their
    messages are the same; -1 when they are not (both have lists of messages)."""
    if not _same_but_messages(request, last):
        return -1
    return shared_head(request.messages, last.messages)


def _paired(
    link: _Link, mine: list[ValueTemplate], theirs: list[ValueTemplate]
) -> dict[str, str] | None:
    """The values messages that walk alike add to the pairing (each live value to the
    recording's), None when they do not walk alike or a value would be paired two
    ways."""
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
    return added
