"""A coding agent's next turn matched by what it adds (``gateway.turns``,
``matching.continuation``) gives what the full path gives: the same recordings replayed,
the same misses, over whole sessions of Claude Code's and Codex's captured requests sent
to a replaying gateway over loopback, with fresh values, sessions interleaved, and turns
built to tell a one-to-one pairing of values from a looser one. Each case runs twice, the
second time with the shortcut switched off, and the shortcut must have taken the turns."""

from __future__ import annotations

import asyncio
import copy
import tempfile
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession

from benchmarks import captured
from benchmarks._common import Route, Server, client_session, compact, post, send_each
from otel_replay.cassette.model import dump, load
from otel_replay.gateway.runner import GatewayConfig, GatewayServer
from otel_replay.gateway.turns import Turns
from otel_replay.matching.continuation import Continuations
from otel_replay.matching.exact import RAW_MAX
from otel_replay.matching.rulefile import parse_rules
from otel_replay.matching.sources import RuleSources

TURNS = 8
CLAUDE = Route(captured.MESSAGES, captured.HEADERS)
CODEX = Route(captured.RESPONSES, captured.CODEX_HEADERS)

Body = dict[str, Any]


def claude(n: int, date: str = "2026-11-02") -> list[Body]:
    return captured.session_bodies(str(uuid.UUID(int=n)), date, TURNS)


def codex(n: int, date: str = "2026-11-02") -> list[Body]:
    return captured.codex_session_bodies(n, date, TURNS)


def record(folder: Path, route: Route, bodies: list[Body], copies: int = 2) -> Path:
    """A cassette of ``bodies`` recorded through a gateway against a bare handler
    streaming the stub upstream's answer, each interaction ``copies`` times."""

    async def run() -> None:
        with Server(kind="stub") as stub:
            async with client_session() as session:
                answer = await post(
                    session, stub.url + route.path, compact(bodies[0]), route.headers
                )
        (folder / "answer").write_bytes(answer)
        with Server(kind="bare", stream=folder / "answer") as bare:
            with Server(kind="gateway", mode="record", cassette=cassette, upstream=bare.url) as g:
                await send_each(g.url, [compact(b) for b in bodies], route)

    cassette = folder / "session.json"
    asyncio.run(run())
    once = load(cassette)
    dump(replace(once, interactions=once.interactions * copies), cassette)
    return cassette


def replay(
    cassette: Path,
    route: Route,
    bodies: list[Body],
    *,
    follow: bool,
    rules: str = "",
    ahead: bool = True,
) -> tuple[list[tuple[int, bytes]], list[int], int]:
    """Each body's status and answer from a strict replaying gateway, the recordings it
    replayed in order, and how many turns were matched by what they add (``ahead``: what
    the next turn needs made once a turn is answered, ``Turns.prepare``)."""
    sources = RuleSources((parse_rules(rules, "otel-replay.toml")[0],)) if rules else RuleSources()

    async def run() -> tuple[list[tuple[int, bytes]], list[int], int]:
        gateway = GatewayServer(
            GatewayConfig(
                mode="strict",
                cassette=cassette,
                upstream_openai="http://127.0.0.1:9/v1",
                upstream_anthropic="http://127.0.0.1:9",
                environ={},
                rules=sources,
            )
        )
        await gateway.start()
        answers = []
        try:
            async with ClientSession() as client:
                for body in bodies:
                    url = f"http://127.0.0.1:{gateway.port}{route.path}"
                    async with client.post(url, data=compact(body), headers=route.headers) as r:
                        answers.append((r.status, await r.read()))
            app = gateway.gateway
            turns = app._turns
            followed = 0 if turns is None else turns.followed
            hits = list(app.session.hits)
        finally:
            await gateway.stop()
        return answers, hits, followed

    original, prepare = Turns.follow, Turns.prepare
    if not follow:
        Turns.follow = lambda self, provider, path, raw: None  # type: ignore[method-assign]
    if not ahead:
        Turns.prepare = lambda self, provider, path: None  # type: ignore[method-assign]
    try:
        return asyncio.run(run())
    finally:
        Turns.follow, Turns.prepare = original, prepare  # type: ignore[method-assign]


def same_both_ways(
    cassette: Path, route: Route, bodies: list[Body], rules: str = ""
) -> tuple[list[int], int, list[int]]:
    """The replay with and without the shortcut, held equal: hits, turns followed,
    statuses."""
    fast, fast_hits, followed = replay(cassette, route, bodies, follow=True, rules=rules)
    full, full_hits, none = replay(cassette, route, bodies, follow=False, rules=rules)
    assert none == 0
    assert [status for status, _ in fast] == [status for status, _ in full]
    assert [a for s, a in fast if s == 200] == [a for s, a in full if s == 200]
    assert fast_hits == full_hits
    return fast_hits, followed, [status for status, _ in fast]


@pytest.fixture(scope="module")
def claude_cassette() -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        yield record(Path(tmp), CLAUDE, claude(0, "2025-01-01"))


@pytest.fixture(scope="module")
def codex_cassette() -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        yield record(Path(tmp), CODEX, codex(0, "2025-01-01"))


@pytest.mark.parametrize("which", ["claude", "codex"])
def test_fresh_sessions_replay_alike_and_later_turns_are_followed(
    which: str, claude_cassette: Path, codex_cassette: Path
) -> None:
    cassette, route, make = (
        (claude_cassette, CLAUDE, claude) if which == "claude" else (codex_cassette, CODEX, codex)
    )
    bodies = make(1) + make(2, "2026-11-03")  # both copies of the recording, then one more
    hits, followed, statuses = same_both_ways(cassette, route, bodies + make(3)[:2])
    assert statuses[: 2 * TURNS] == [200] * (2 * TURNS)
    assert 200 not in statuses[2 * TURNS :]  # both copies used: a third session misses
    assert sorted(hits) == list(range(2 * TURNS))
    assert followed >= 2 * (TURNS - 2)  # every turn after a session's first (and second)


@pytest.mark.parametrize("which", ["claude", "codex"])
def test_what_is_made_ahead_of_a_turn_changes_no_answer(
    which: str, claude_cassette: Path, codex_cassette: Path
) -> None:
    """The pairing of a session's first match and the templates of the messages the next
    recording adds, made once a turn is answered, give the answers the turn would have
    found making them itself; made so, no turn pairs a match itself."""
    cassette, route, make = (
        (claude_cassette, CLAUDE, claude) if which == "claude" else (codex_cassette, CODEX, codex)
    )
    bodies = make(4) + make(5, "2026-11-05")[:3]
    inside, pairs = [False], {True: 0, False: 0}
    follow, pair = Turns.follow, Continuations._pair

    def following(self: Turns, *args: Any) -> Any:
        inside[0] = True
        try:
            return follow(self, *args)
        finally:
            inside[0] = False

    def pairing(self: Continuations, *args: Any) -> Any:
        pairs[inside[0]] += 1
        return pair(self, *args)

    Turns.follow, Continuations._pair = following, pairing  # type: ignore[method-assign]
    try:
        ahead = replay(cassette, route, bodies, follow=True)
        made = dict(pairs)
        pairs.update({True: 0, False: 0})
        itself = replay(cassette, route, bodies, follow=True, ahead=False)
    finally:
        Turns.follow, Continuations._pair = follow, pair  # type: ignore[method-assign]
    assert ahead == itself
    assert [status for status, _ in ahead[0]] == [200] * len(bodies)
    assert ahead[2] >= TURNS  # both sessions' later turns followed
    assert made == {True: 0, False: 2} and pairs == {True: 2, False: 0}


def test_interleaved_sessions_replay_alike(codex_cassette: Path) -> None:
    one, two = codex(5), codex(6, "2026-11-04")
    bodies = [b for pair in zip(one, two, strict=True) for b in pair]
    hits, _, statuses = same_both_ways(codex_cassette, CODEX, bodies)
    assert statuses == [200] * len(bodies)
    assert sorted(hits) == list(range(2 * TURNS))


def reusing(bodies: list[Body]) -> list[Body]:
    """From the third request on, the second tool call names the id the first had."""
    changed = copy.deepcopy(bodies)
    for body in changed[2:]:
        messages = body["messages"]
        first = messages[2]["content"][1]["id"]
        messages[4]["content"][1]["id"] = first
        messages[5]["content"][0]["tool_use_id"] = first
    return changed


def test_a_value_paired_two_ways_misses_alike(claude_cassette: Path) -> None:
    """A later turn's tool call names the id an earlier turn's call had; recorded, the
    ids differ: not the same conversation up to fresh values."""
    _, followed, statuses = same_both_ways(claude_cassette, CLAUDE, reusing(claude(7)))
    assert statuses[:2] == [200, 200] and statuses[2] != 200
    assert followed >= 1


def test_a_value_recorded_twice_is_not_paired_with_two_fresh_ones() -> None:
    """The other way round: the recording names one id twice, the live turns two."""
    with tempfile.TemporaryDirectory() as tmp:
        cassette = record(Path(tmp), CLAUDE, reusing(claude(0, "2025-01-01")), copies=1)
        _, followed, statuses = same_both_ways(cassette, CLAUDE, claude(8))
    assert statuses[:2] == [200, 200] and statuses[2] != 200
    assert followed >= 1


def test_a_changed_message_text_misses_alike(codex_cassette: Path) -> None:
    bodies = codex(8)
    bodies[4] = copy.deepcopy(bodies[4])
    bodies[4]["input"][-1]["output"][0]["text"] = "Script failed\nWall time 0.3 seconds\n"
    _, followed, statuses = same_both_ways(codex_cassette, CODEX, bodies[:5])
    assert statuses[:4] == [200] * 4 and statuses[4] != 200
    assert followed >= 2


def test_an_ignore_rule_inside_messages_is_applied_to_the_new_ones(
    claude_cassette: Path,
) -> None:
    """``messages[*].parts[*].response`` ignored: a turn whose new tool result differs
    still matches, by either path."""
    bodies = claude(9)
    for body in bodies[3:]:
        body["messages"] = copy.deepcopy(body["messages"])
        body["messages"][-1]["content"][0]["content"] = "changed output"
    rules = '[[ignore]]\npath = "messages[*].parts[*].response"\n'
    _, followed, statuses = same_both_ways(claude_cassette, CLAUDE, bodies, rules)
    assert statuses == [200] * TURNS
    assert followed >= TURNS - 3


def test_a_member_after_the_conversation_changed_misses_alike(codex_cassette: Path) -> None:
    """Codex writes ``client_metadata`` with its keys in a new order each request (the
    turns are followed all the same); a value changed after ``input`` is no such turn."""
    bodies = codex(10)
    bodies[4] = {**bodies[4], "parallel_tool_calls": True}
    bodies[5] = {**bodies[5], "client_metadata": {**bodies[5]["client_metadata"], "extra": 1}}
    orders = {tuple(body["client_metadata"]) for body in bodies[:4]}
    assert len(orders) == 4  # reordered each request
    _, followed, statuses = same_both_ways(codex_cassette, CODEX, bodies[:6])
    assert statuses[:4] == [200] * 4 and statuses[4] != 200 and statuses[5] != 200
    assert 2 <= followed <= 3  # up to the fourth request; not the changed ones


@pytest.mark.parametrize("which", ["claude", "codex"])
def test_a_session_sent_as_recorded_is_followed_after_its_first_exact_turn(
    which: str, claude_cassette: Path, codex_cassette: Path
) -> None:
    """Requests byte for byte the recorded ones are found by their bytes; the first such
    turn read whole (one too large to be looked up as sent) begins a chain, so every
    later one is matched by what it adds (not read and hashed whole), and both copies
    replay as the full path replays them."""
    cassette, route, bodies = (
        (claude_cassette, CLAUDE, claude(0, "2025-01-01"))
        if which == "claude"
        else (codex_cassette, CODEX, codex(0, "2025-01-01"))
    )
    read = next(i for i, body in enumerate(bodies) if len(compact(body)) > RAW_MAX)
    hits, followed, statuses = same_both_ways(cassette, route, bodies + bodies)
    assert statuses == [200] * (2 * TURNS)
    assert sorted(hits) == list(range(2 * TURNS))
    assert followed == 2 * (TURNS - 1 - read)
