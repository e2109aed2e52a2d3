"""Responses continued by ``previous_response_id``, with the official ``openai`` SDK over
the Responses API's WebSocket mode (``client.responses.connect()``) and over HTTP: a
replayed continuation gets the answer of what it continues, even where another
conversation was continued with the same words, and an id the replay never answered with
misses, naming ``previous_response_id``."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from test_websockets import KEY, MODEL, Outcome, _gateway_run, _replay

from otel_replay.cassette.model import Cassette, load
from otel_replay.cassette.recordings import Recordings
from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import CanonicalRequest, Exchange, Response
from otel_replay.frontends.cli import main
from otel_replay.gateway.runner import GatewayConfig
from otel_replay.matching.chain import Chain
from otel_replay.matching.matcher import Matcher
from otel_replay.testing.stub import run_stub

Step = tuple[str, str, str | None]
"""A turn: its name, its prompt, and the turn it continues (by name) or an id as given."""

RECORDED: list[Step] = [
    ("A", "tell me about A", None),
    ("A2", "go on", "A"),
    ("B", "tell me about B", None),
    ("B2", "go on", "B"),  # the same request as A2's, up to the id it continues
]
ANSWERS = {"A": "about A", "A2": "more about A", "B": "about B", "B2": "more about B"}
# the same two conversations, the second continued first
SWAPPED: list[Step] = [RECORDED[0], RECORDED[2], RECORDED[3], RECORDED[1]]
MADE_UP = "resp_0123456789abcdef0123456789abcdef"


def _message(text: str) -> list[dict[str, Any]]:
    content = [{"type": "output_text", "text": text, "annotations": []}]
    return [{"type": "message", "role": "assistant", "content": content}]


def _continued(step: Step, ids: dict[str, str]) -> Any:
    after = step[2]
    return openai.omit if after is None else ids.get(after, after)


async def websocket_turns(url: str, steps: list[Step]) -> dict[str, Any]:
    """The turns over one connection: each turn's text, or the error frame's message."""
    client = openai.AsyncOpenAI(api_key=KEY, base_url=f"{url}/v1", max_retries=0)
    ids: dict[str, str] = {}
    texts: dict[str, Any] = {}
    async with client.responses.connect() as connection:
        for step in steps:
            name, prompt = step[:2]
            await connection.response.create(
                model=MODEL, input=prompt, previous_response_id=_continued(step, ids)
            )
            text = ""
            async for event in connection:
                if event.type == "response.output_text.delta":
                    text += event.delta
                elif event.type == "response.completed":
                    ids[name] = event.response.id
                    break
                elif event.type == "error":
                    text = ("error", event.error.message)
                    break
            texts[name] = text
    return texts


async def http_turns(url: str, steps: list[Step]) -> dict[str, Any]:
    """The same turns over HTTP."""
    ids: dict[str, str] = {}
    texts: dict[str, Any] = {}
    async with openai.AsyncOpenAI(api_key=KEY, base_url=f"{url}/v1", max_retries=0) as client:
        for step in steps:
            name, prompt = step[:2]
            try:
                answer = await client.responses.create(
                    model=MODEL, input=prompt, previous_response_id=_continued(step, ids)
                )
            except openai.BadRequestError as exc:
                texts[name] = ("error", exc.message)
                continue
            ids[name] = answer.id
            texts[name] = answer.output_text
    return texts


@pytest.fixture(scope="module")
def chains(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Outcome]]:
    """Two conversations, A then A2 continuing it, B then B2 continuing it, where A2 and
    B2 send the same words."""
    cassette = tmp_path_factory.mktemp("chains") / "chains.json"
    yield cassette, _record(cassette, ANSWERS)


def _record(cassette: Path, answers: dict[str, str]) -> Outcome:
    """The recorded turns answered with ``answers``, the trace file beside the cassette."""
    with run_stub() as stub:
        stub.script(*(_message(answers[name]) for name, _, _ in RECORDED))
        config = GatewayConfig(
            mode="record",
            cassette=cassette,
            traces=cassette.with_suffix(".jsonl"),
            upstream_openai=stub.openai_url,
        )
        return _gateway_run(config, lambda url: websocket_turns(url, RECORDED))


def test_a_continuation_replays_what_it_continues_over_the_websocket(chains):
    cassette, live = chains
    assert live.output == ANSWERS
    again = _replay(cassette, lambda url: websocket_turns(url, SWAPPED))
    # B2 is equal to A2 up to the id it continues, and A2 was recorded first
    assert again.output == ANSWERS
    assert (again.summary.replayed, again.summary.misses) == (4, [])


def test_a_continuation_replays_what_it_continues_over_http(chains):
    cassette, _ = chains
    again = _replay(cassette, lambda url: http_turns(url, SWAPPED))
    assert again.output == ANSWERS
    assert (again.summary.replayed, again.summary.misses) == (4, [])


@pytest.mark.parametrize("turns", [websocket_turns, http_turns], ids=["websocket", "http"])
def test_an_id_the_replay_never_answered_with_misses(chains, turns):
    cassette, _ = chains
    steps: list[Step] = [RECORDED[0], ("X", "go on", MADE_UP)]
    missed = _replay(cassette, lambda url: turns(url, steps))
    assert missed.output["A"] == ANSWERS["A"]
    kind, message = missed.output["X"]
    assert kind == "error"
    (miss,) = missed.summary.misses
    assert miss.startswith(f"replay miss: previous_response_id {MADE_UP} is the id of no"), miss
    assert miss in message


def test_a_continuation_never_takes_another_responses_continuation(chains):
    cassette, _ = chains
    # A continued twice: the second time only B2, which continues B, is left
    steps: list[Step] = [*RECORDED[:3], ("again", "go on", "A")]
    missed = _replay(cassette, lambda url: websocket_turns(url, steps))
    assert missed.output["again"][0] == "error"
    (miss,) = missed.summary.misses
    assert "continues recording 0's response; the recordings equal to this" in miss, miss


def _why(cassette: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["why", "--cassette", str(cassette), *extra])
    return code, out.getvalue(), err.getvalue()


def test_why_holds_a_continuation_to_what_it_continues(chains):
    """``why`` explains the miss as the replay met it: the request equals a recording,
    which continues another response, and no rule would change that."""
    cassette, _ = chains
    steps: list[Step] = [*RECORDED[:3], ("again", "go on", "A")]
    missed = _replay(cassette, lambda url: websocket_turns(url, steps))
    (miss,) = missed.summary.misses
    code, out, _ = _why(cassette)
    assert code == 0
    head = out.splitlines()[0]
    assert head == miss, out
    assert "continues recording 0's response" in head
    code, out, err = _why(cassette, "--suggest")
    assert (code, out) == (1, "")
    assert "continues recording 0's response" in err, err
    assert err.rstrip().endswith("no rule can turn it into a hit"), err


# -- auto: a miss goes live with the caller's key -------------------------------------------

FURTHER: list[Step] = [RECORDED[0], RECORDED[1], ("A3", "and then?", "A2")]


def _auto(cassette: Path, environ: dict[str, str], stub_url: str) -> Outcome:
    config = GatewayConfig(
        mode="auto", cassette=cassette, upstream_openai=stub_url, environ=environ
    )
    return _gateway_run(config, lambda url: websocket_turns(url, FURTHER))


def test_an_auto_miss_goes_live_over_the_websocket_and_is_recorded(chains, tmp_path):
    cassette = tmp_path / "auto.json"
    cassette.write_bytes(chains[0].read_bytes())
    with run_stub() as stub:
        ran = _auto(cassette, {"OPENAI_API_KEY": KEY}, stub.openai_url)
        # the upstream's WebSocket opened at the miss, for it alone
        assert [(r.method, r.path) for r in stub.received] == [("GET", "/v1/responses")]
    further = {"A": ANSWERS["A"], "A2": ANSWERS["A2"], "A3": "stub reply to: and then?"}
    assert ran.output == further
    assert (ran.summary.replayed, ran.summary.live, ran.summary.misses) == (2, 1, [])
    grown = load(cassette).interactions
    assert len(grown) == len(RECORDED) + 1
    assert grown[-1].response.events[-1].event == "response.completed"
    # the live answer replays strictly with the upstream gone, its chain and all
    again = _replay(cassette, lambda url: websocket_turns(url, FURTHER))
    assert again.output == further
    assert (again.summary.replayed, again.summary.misses) == (3, [])


def test_an_auto_miss_without_the_key_stays_a_miss_not_evaluated(chains, tmp_path):
    cassette = tmp_path / "auto.json"
    cassette.write_bytes(chains[0].read_bytes())
    with run_stub() as stub:
        ran = _auto(cassette, {}, stub.openai_url)
        assert stub.received == []
    assert ran.output["A3"][0] == "error"
    assert len(ran.summary.misses) == 1 and ran.summary.live == 0
    assert ran.summary.not_evaluated


# -- diff: the WebSocket turns of two runs, aligned ------------------------------------------


def _diff(base: Path, new: Path) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["diff", str(base), str(new)])
    return code, out.getvalue()


def test_diff_shows_the_websocket_turn_that_changed(chains, tmp_path):
    base = chains[0]
    new = tmp_path / "new.json"
    changed = _record(new, {**ANSWERS, "A2": "something else about A"})
    assert changed.output["A2"] == "something else about A"
    # a cassette and the trace file of the same run have the same trajectory
    code, text = _diff(base, base.with_suffix(".jsonl"))
    assert code == 0 and "equal: the same 4 steps" in text, text
    for left, right in ((base, new), (base.with_suffix(".jsonl"), new.with_suffix(".jsonl"))):
        code, text = _diff(left, right)
        assert code == 1, text
        assert "differ at step 2: model answer changed (model gpt-5.5) at call 2" in text
        assert 'BASE  [{"content":"more about A","type":"text"}]' in text
        assert 'NEW   [{"content":"something else about A","type":"text"}]' in text
        # the turns continued by id compare equal: only the one answer differs
        assert text.count("  ~ ") == 1, text


def test_a_recording_silent_on_what_it_continued_is_not_held_to_it():
    """A recording rebuilt from a trace that kept not every parameter (the lossy-source
    rule) matches a continuation of any response; a full one only of its own."""
    said = [{"role": "user", "parts": [{"type": "text", "content": "go on"}]}]
    lossy = CanonicalRequest("/v1/responses", MODEL, messages=said, known=frozenset({"messages"}))
    full = CanonicalRequest(
        "/v1/responses", MODEL, messages=said, params={"previous_response_id": "resp_1a"}
    )
    cassette = [
        Exchange("openai", "responses", r, Response(200, body={"id": f"resp_{n}b"}))
        for n, r in enumerate((lossy, full))
    ]
    live = CanonicalRequest(
        "/v1/responses", MODEL, messages=said, params={"previous_response_id": MADE_UP}
    )
    matcher = Matcher([ex.request for ex in cassette])
    chain = Chain(Recordings(Cassette(interactions=cassette)))
    assert matcher.match(live, chain.only(live)) == 0  # the lossy one, silent on it
    with pytest.raises(ReplayMiss, match=f"previous_response_id {MADE_UP} is the id of no"):
        matcher.match(live, chain.only(live))  # the full one continues another


def test_a_conversation_begun_before_the_recording_continues_as_recorded():
    """An id no recording answered with, named by a recording too (the agent continued a
    response made before the recording began), matches that recording and only it."""
    said = [{"role": "user", "parts": [{"type": "text", "content": "go on"}]}]

    def request(after: str) -> CanonicalRequest:
        return CanonicalRequest(
            "/v1/responses", MODEL, messages=said, params={"previous_response_id": after}
        )

    outside, other = MADE_UP, "resp_fedcba9876543210fedcba9876543210"
    cassette = [
        Exchange("openai", "responses", request(outside), Response(200, body={"id": "resp_2"}))
    ]
    matcher = Matcher([ex.request for ex in cassette])
    chain = Chain(Recordings(Cassette(interactions=cassette)))
    assert matcher.match(request(outside), chain.only(request(outside))) == 0
    with pytest.raises(ReplayMiss, match=f"previous_response_id {other} is the id of no"):
        Matcher([ex.request for ex in cassette]).match(request(other), chain.only(request(other)))
