"""The path a recorded exchange takes from ``Session.recorded`` to its line in the trace
file, walked and counted (``docs/how-it-works.md``, "The path of a recorded exchange").

The walk: every call of a function of the package while ``Session.recorded`` records one
exchange (a coding agent's second turn, its request half drafted while its provider
worked, as the gateway does), up to the write of its line (``_LineFile.append``): what
the session does after the line is written (its counts, the ledger's commit) is the
run's accounting, not the exchange's way to the file. A module is a *room*; the floors
``core/`` (the vocabulary every floor reads) and ``providers/`` (the provider's own
reading of its answer) are passages, not rooms: a call into them is not counted, a call
out of them (a memo calling back the function it remembers) counts as a call from the
room that called them. Rooms are ranked by when the walk first enters them. Counted:

- **rooms**: the modules entered (``session/session.py`` included);
- **returns**: calls from one room into another that the walk had entered before;
- **upward**: returns into a room ranked before the caller's: the exchange sent back to
  an earlier step of its path (the session, ranked first, sequencing the steps never
  climbs).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import otel_replay
from benchmarks import captured
from otel_replay import providers
from otel_replay._version import __version__
from otel_replay.cassette import provenance
from otel_replay.core import jsontext
from otel_replay.core.exchange import Exchange, Response, SSEEvent
from otel_replay.session.session import Session
from otel_replay.spans.draft import RequestDraft
from otel_replay.spans.pieces import holds_no_piece

PACKAGE = Path(otel_replay.__file__).resolve().parent
PASSAGES = ("core", "providers")
CHAT = "/v1/chat/completions"

# What the walk counts as the path stands (13 rooms, 45 returns, 17 upward before it ran
# one way; 11 rooms and 43 returns before each step had one room): a change may lower
# these, never raise them. The aim (``docs/how-it-works.md``) is 8 rooms at most and 2
# upward returns at most.
TODAY = {"rooms": 8, "returns": 14, "upward": 0}


def _room(frame: FrameType | None) -> str | None:
    """The room ``frame`` runs in, or the nearest one below it on the stack."""
    while frame is not None:
        path = Path(frame.f_code.co_filename)
        if path.is_relative_to(PACKAGE):
            name = path.relative_to(PACKAGE).as_posix()
            if name.split("/")[0] not in PASSAGES:
                return name
        frame = frame.f_back
    return None


class Walk:
    """The rooms a walk entered, in order, and its calls from room to room."""

    def __init__(self) -> None:
        self.rank: dict[str, int] = {}
        self.crossings: list[tuple[str, str]] = []

    def enter(self, caller: str, callee: str) -> None:
        self.rank.setdefault(caller, len(self.rank))
        if callee != caller:
            self.crossings.append((caller, callee))
        self.rank.setdefault(callee, len(self.rank))

    def counts(self) -> dict[str, int]:
        entered: set[str] = set()
        returns = upward = 0
        for caller, callee in self.crossings:
            entered.add(caller)
            if callee in entered:
                returns += 1
                upward += self.rank[callee] < self.rank[caller]
            entered.add(callee)
        return {"rooms": len(self.rank), "returns": returns, "upward": upward}

    def path(self) -> str:
        return " → ".join(callee for _, callee in self.crossings)


def walked(run: Callable[[], Any], start: str = "session/session.py") -> Walk:
    """The walk of ``run`` from room ``start``, up to the first line written."""
    walk = Walk()
    walk.rank[start] = 0
    done = False

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal done
        if event != "call" or done:
            return
        callee, caller = _room(frame), _room(frame.f_back)  # a passage: its caller's room
        if callee is not None and caller is not None and callee != caller:
            walk.enter(caller, callee)
        if frame.f_code.co_name == "append" and callee == "otlp/store.py":
            done = True  # the line reaches the file

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return walk


def test_the_walk_counts_as_defined() -> None:
    walk = Walk()
    walk.rank["s"] = 0
    for caller, callee in [("s", "a"), ("a", "b"), ("a", "b"), ("b", "a"), ("s", "a"), ("s", "c")]:
        walk.enter(caller, callee)
    # b → a: a return, upward (a came first); a → b again: a return, not upward;
    # s → a again: a return, not upward (the session sequencing)
    assert walk.counts() == {"rooms": 4, "returns": 3, "upward": 1}


SYSTEM = "You are a coding agent working in a repository; follow its conventions. " * 8
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{i}",
            "description": f"Tool {i} reads and changes files of the repository. " * 8,
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    for i in range(6)
]


def _body(turns: int, earlier: list[Any] | None = None) -> dict[str, Any]:
    messages: list[Any] = [{"role": "system", "content": SYSTEM}]
    for turn in range(turns):
        messages.append({"role": "user", "content": f"step {turn}: " + "look at it. " * 30})
        messages.append({"role": "assistant", "content": f"done with step {turn}"})
    if earlier is not None:
        messages[: len(earlier)] = earlier  # resent as the very same objects
    messages.append({"role": "user", "content": "and now the next one. " * 20})
    metadata = {"session": "s-" + "0123456789abcdef" * 10}
    return {"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS, "metadata": metadata}


def _exchange(body: dict[str, Any], n: int) -> Exchange:
    answer = {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Here it is. " * 40},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 900, "completion_tokens": 120, "total_tokens": 1020},
    }
    return Exchange(
        provider="openai",
        operation="chat",
        request=providers.provider_for(CHAT, {}).canonical(CHAT, body),
        response=Response(status=200, headers={"content-type": "application/json"}, body=answer),
        raw_request=body,
        stream=False,
        start_ns=1_700_000_000_000_000_000 + n,
        end_ns=1_700_000_000_400_000_000 + n,
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id=f"b7ad6b71692033{n:02d}",
    )


def _drafted(session: Session, ex: Exchange) -> RequestDraft | None:
    steps = session.span_drafting(ex.request, ex.raw_request)
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            draft: RequestDraft | None = stop.value
            return draft


@pytest.fixture
def second_turn(tmp_path: Path) -> Any:
    session = Session(mode="record", cassette=None, traces=tmp_path / "run.jsonl")
    first = _body(1)
    earlier = _exchange(first, 1)
    assert session.recorded(earlier, draft=_drafted(session, earlier))
    ex = _exchange(_body(2, first["messages"][:3]), 2)
    draft = _drafted(session, ex)
    assert draft is not None
    yield session, ex, draft
    session.discard()


def test_the_path_of_a_recorded_exchange(second_turn: Any) -> None:
    session, ex, draft = second_turn
    walk = walked(lambda: session.recorded(ex, draft=draft))
    counts = walk.counts()
    assert session.store.traces_path is not None
    assert session.store.traces_path.read_bytes().count(b"\n") == 2  # the walk wrote it
    assert "spans/encode.py" in walk.rank and "otlp/store.py" in walk.rank
    over = {k: (counts[k], TODAY[k]) for k in TODAY if counts[k] > TODAY[k]}
    assert not over, f"the path grew (now, before): {over}\n{walk.path()}"


# --- the bytes the path writes -----------------------------------------------------------
# A coding agent's session of each kind (the benchmarks' captured Claude Code and Codex
# requests, turn after turn, answered by a stream), and the conversation walked above,
# recorded by a session into a trace file and a cassette. The SHA-256 of what is written
# is today's: a change of the path must write the very same bytes (the version of the
# package, in every line and the cassette's provenance, the recording's time and the
# directories the cassette's rules record read as placeholders). A change of the span
# format changes them on purpose, and these with it.

ANTHROPIC_EVENTS = [
    ("message_start", {"type": "message_start", "message": {"id": "msg_1", "type": "message",
     "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": None,
     "usage": {"input_tokens": 900, "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0,
     "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0,
     "delta": {"type": "text_delta", "text": "Reading the module now. " * 12}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
     "usage": {"output_tokens": 40}}),
    ("message_stop", {"type": "message_stop"}),
]  # fmt: skip
RESPONSES_EVENTS = [
    ("response.created", {"type": "response.created", "response": {"id": "resp_1",
     "object": "response", "status": "in_progress", "model": "gpt-5-codex", "output": []}}),
    ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_1",
     "output_index": 0, "content_index": 0, "delta": "Running the command. " * 12}),
    ("response.completed", {"type": "response.completed", "response": {"id": "resp_1",
     "object": "response", "status": "completed", "model": "gpt-5-codex", "output": [
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "Running the command. " * 12}]}],
     "usage": {"input_tokens": 900, "output_tokens": 40, "total_tokens": 940}}}),
]  # fmt: skip


def _agent_calls(kind: str, turns: int) -> list[Exchange]:
    if kind == "claude":
        bodies = captured.session_bodies(
            "00000000-0000-0000-0000-000000000000", "2025-01-01", turns
        )
        path, headers, provider, operation, events = (
            captured.MESSAGES, captured.HEADERS, "anthropic", "chat", ANTHROPIC_EVENTS
        )  # fmt: skip
    else:
        bodies = captured.codex_session_bodies(0, "2025-01-01", turns)
        path, headers, provider, operation, events = (
            captured.RESPONSES, captured.CODEX_HEADERS, "openai", "responses", RESPONSES_EVENTS
        )  # fmt: skip
    surface = providers.provider_for(path, headers)
    answer = [
        SSEEvent(data=json.dumps(data), event=name, t=0.01 * i)
        for i, (name, data) in enumerate(events)
    ]
    return [
        Exchange(
            provider=provider,
            operation=operation,
            request=surface.canonical(path, body),
            response=Response(
                status=200, headers={"content-type": "text/event-stream"}, events=answer
            ),
            raw_request=body,
            stream=True,
            start_ns=1_735_725_600_000_000_000 + n * 1_000_000_000,
            end_ns=1_735_725_600_500_000_000 + n * 1_000_000_000,
            trace_id=f"{n + 1:032x}",
            span_id=f"{n + 1:016x}",
        )
        for n, body in enumerate(bodies)
    ]


def _recorded_bytes(tmp_path: Path, calls: list[Exchange], monkeypatch: Any) -> bytes:
    """The trace file and the cassette a recording session writes for ``calls``."""
    monkeypatch.setattr(provenance, "_utc_now", lambda: "RECORDED-AT")
    traces, cassette = tmp_path / "run.jsonl", tmp_path / "run.json"
    session = Session(mode="record", cassette=cassette, traces=traces)
    for ex in calls:
        short = holds_no_piece(jsontext.value_text(ex.raw_request).encode())
        draft = None if short else _drafted(session, ex)
        assert session.recorded(ex, short=short, draft=draft)
    session.store.close()
    written = traces.read_bytes()
    session.finish()
    written += cassette.read_bytes()
    varying = [(__version__, b"VERSION"), (str(tmp_path), b"TMP"), (str(Path.cwd()), b"CWD")]
    for value, placeholder in [*varying, (str(Path.home()), b"HOME")]:
        written = written.replace(json.dumps(value)[1:-1].encode(), placeholder)
    return hashlib.sha256(written).hexdigest().encode()


TODAYS_BYTES = {
    "claude": b"1443faa8f39aba6a357cdaa8a378bf7889b8601d8a9b014b6d70b11ec9770ec7",
    "codex": b"b5887a3d3f5dc4447b69b4611b0feb4bb5c1efc0a7a149bd8c0d6e69244e5ed3",
    "conversation": b"c6e0de3c088db80742744a4afeeb2ab981132e5c2d10a9c5032784dc07b16825",
}


@pytest.mark.parametrize("kind", sorted(TODAYS_BYTES))
def test_the_path_writes_todays_bytes(kind: str, tmp_path: Path, monkeypatch: Any) -> None:
    if kind == "conversation":
        first = _body(1)
        calls = [_exchange(first, 1), _exchange(_body(2, first["messages"][:3]), 2)]
        calls += [_exchange(_body(turn), 2 + turn) for turn in range(3, 6)]
    else:
        calls = _agent_calls(kind, 8)
    written = _recorded_bytes(tmp_path, calls, monkeypatch)
    assert written == TODAYS_BYTES[kind], (
        f"{kind}: the trace file or the cassette a recording writes changed; when the span"
        " or cassette format changed on purpose, this is its new digest"
    )
