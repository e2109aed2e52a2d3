"""Forks: a recorded four-call tool loop (the official ``openai`` and ``anthropic`` SDKs,
``fork_agent.py``) replayed up to a call and continued live against a second stub
upstream, standing for another model (its text answers read ``other reply to: …``).

The CLI runs as a subprocess (``replay --live-from N --model M --fork-to NEW -- agent``);
the Python API and the pytest plugin take the same in-process (``fork=(N, model)``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import fork_agent
import pytest

import otel_replay
from otel_replay.cassette.model import load
from otel_replay.core.errors import ReplayMiss
from otel_replay.frontends.cli import main
from otel_replay.gateway.decide import Decision
from otel_replay.gateway.fork import decide_live, going_live
from otel_replay.session.fork import Fork, ForkPlan, fork_target
from otel_replay.session.fork_points import fork_point, parse_live_from
from otel_replay.testing.browser import browser_page
from otel_replay.testing.stub import Fault, StubUpstream, run_stub

KEYS = {"OPENAI_API_KEY": "sk-test-1234567890abcdef", "ANTHROPIC_API_KEY": "sk-ant-test-12345678"}
AGENT = [sys.executable, str(Path(__file__).with_name("fork_agent.py"))]
SDK_MODEL = {"openai": fork_agent.OPENAI_MODEL, "anthropic": fork_agent.ANTHROPIC_MODEL}
OTHER_MODEL = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}
UPSTREAM = {"openai": "--upstream-openai", "anthropic": "--upstream-anthropic"}


def base(stub: StubUpstream, api: str) -> str:
    return stub.openai_url if api == "openai" else stub.anthropic_url


@pytest.fixture(scope="module")
def stubs() -> Iterator[tuple[StubUpstream, StubUpstream]]:
    with run_stub() as first, run_stub(voice="other") as second:
        yield first, second


@pytest.fixture(scope="module")
def recorded(
    stubs: tuple[StubUpstream, StubUpstream], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """The loop recorded against the first stub: per SDK, plain and streamed."""
    folder, (first, _) = tmp_path_factory.mktemp("recorded"), stubs
    out: dict[str, Path] = {}
    with pytest.MonkeyPatch.context() as env:
        for name, value in KEYS.items():
            env.setenv(name, value)
        for api in ("openai", "anthropic"):
            for stream in (False, True):
                name = api + ("-stream" if stream else "")
                out[name] = folder / f"{name}.json"
                with otel_replay.record(out[name], **{f"upstream_{api}": base(first, api)}):
                    fork_agent.run(api, stream=stream)
    return out


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


def cli(*args: str, agent: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``otel-replay ARGS -- fork_agent.py AGENT`` as a subprocess (this tree, this env)."""
    command = [sys.executable, "-m", "otel_replay", *args]
    if agent:
        command += ["--", *AGENT, *agent]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def chats(stub: StubUpstream) -> list[dict[str, object]]:
    return [r.body for r in stub.received if r.path.endswith(("/chat/completions", "/messages"))]


def same_recording(a: object, b: object) -> bool:
    """Two interactions carry the same request and answer."""
    fields = ("provider", "operation", "request", "raw_request", "stream", "response")
    return all(getattr(a, f) == getattr(b, f) for f in fields)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_fork_at_3_with_another_model(
    api: str,
    stubs: tuple[StubUpstream, StubUpstream],
    recorded: dict[str, Path],
    tmp_path: Path,
    keys: None,
) -> None:
    first, second = stubs
    original, new = recorded[api], tmp_path / "new.json"
    kept, heard_first, heard_second = original.read_bytes(), len(first.received), len(chats(second))
    model = OTHER_MODEL[api]
    fork = ("--live-from", "3", "--model", model, "--fork-to", str(new))
    done = cli(
        "replay", "--cassette", str(original), *fork, UPSTREAM[api], base(second, api), agent=(api,)
    )
    assert done.returncode == 0, done.stderr
    assert "2 replayed · 2 live · 0 misses" in done.stderr
    assert done.stderr.rstrip().splitlines()[-1].endswith("· forked at call 3")
    answers = done.stdout.splitlines()
    assert answers[:2] == ["tool get_weather", "stub reply to: sunny in Lisbon"]
    assert answers[2:] == [
        "other reply to: And tomorrow?",
        "other reply to: Should I pack an umbrella?",
    ]
    # the live calls went to the second upstream, with the fork's model; none to the first
    assert [body["model"] for body in chats(second)[heard_second:]] == [model, model]
    assert len(first.received) == heard_first
    assert original.read_bytes() == kept

    old, forked = load(original), load(new)
    assert len(forked.interactions) == 4
    for i in (0, 1):  # the first two are the recorded ones
        assert same_recording(forked.interactions[i], old.interactions[i])
        assert forked.interactions[i].provenance == {
            "call": i + 1,
            "origin": "replayed",
            "model": SDK_MODEL[api],
        }
    for i in (2, 3):  # the rest: the agent's own requests, the second upstream's answers
        live = forked.interactions[i]
        assert live.provenance == {"call": i + 1, "origin": "live", "model": model}
        assert live.raw_request["model"] == SDK_MODEL[api]
        assert live.response.body["model"] == model
        assert "other reply to" in json.dumps(live.response.body)
    # call 3 asked what the recording asked; call 4 carries the other model's answer
    assert forked.interactions[2].request == old.interactions[2].request
    assert "other reply to: And tomorrow?" in json.dumps(forked.interactions[3].request.messages)
    assert forked.source["fork"] == {"from": str(original), "at": 3, "model": model}

    # diff names call 3 as the first divergence
    compared = cli("diff", str(original), str(new))
    assert compared.returncode == 1
    assert f"differ at step 4: model answer changed (model {SDK_MODEL[api]}) at call 3" in (
        compared.stdout
    )
    # the fork replays strictly like any other cassette, under the same command
    again = cli("replay", "--mode", "strict", "--cassette", str(new), agent=(api,))
    assert again.returncode == 0, again.stderr
    assert "4 replayed · 0 live · 0 misses" in again.stderr
    assert again.stdout == done.stdout
    assert len(chats(second)) == heard_second + 2


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_forking_a_streamed_call(
    api: str,
    stubs: tuple[StubUpstream, StubUpstream],
    recorded: dict[str, Path],
    tmp_path: Path,
    keys: None,
) -> None:
    _, second = stubs
    new = tmp_path / "new.json"
    with otel_replay.replay(
        recorded[f"{api}-stream"],
        fork=(3, OTHER_MODEL[api]),
        fork_to=new,
        **{f"upstream_{api}": base(second, api)},
    ) as run:
        answers = fork_agent.run(api, stream=True)
    assert answers[2:] == [
        "other reply to: And tomorrow?",
        "other reply to: Should I pack an umbrella?",
    ]
    assert run.summary is not None and run.summary.forked_at == 3
    live = load(new).interactions[2:]
    assert all(ex.stream and ex.response.events for ex in live)
    assert all(ex.provenance and ex.provenance["origin"] == "live" for ex in live)
    with otel_replay.replay(new, mode="strict") as again:
        assert fork_agent.run(api, stream=True) == answers
    assert again.summary is not None and again.summary.replayed == 4


def test_a_changed_prompt_before_the_fork_point_fails_like_strict(
    stubs: tuple[StubUpstream, StubUpstream], recorded: dict[str, Path], tmp_path: Path, keys: None
) -> None:
    _, second = stubs
    new, heard = tmp_path / "new.json", len(second.received)
    fork = ("--live-from", "3", "--fork-to", str(new), "--upstream-openai", second.openai_url)
    done = cli(
        "replay", "--cassette", str(recorded["openai"]), *fork, agent=("openai", "--city", "Porto")
    )
    assert done.returncode == 1
    assert "0 replayed · 0 live · 1 miss" in done.stderr
    assert "replay miss: messages changed" in done.stderr
    assert "new.json not written: the run missed" in done.stderr
    assert not new.exists() and len(second.received) == heard


def test_selectors_pick_the_call(
    stubs: tuple[StubUpstream, StubUpstream], recorded: dict[str, Path], tmp_path: Path, keys: None
) -> None:
    calls = load(recorded["anthropic"]).interactions
    assert fork_point("tool:get_weather", calls) == 2  # the call after the tool's result
    assert fork_point("text:And tomorrow?", calls) == 3
    assert fork_point("text:pack an umbrella", calls) == 4
    _, second = stubs
    for selector, at in (("tool:get_weather", 2), ("text:And tomorrow?", 3)):
        new = tmp_path / f"new-{at}.json"
        with otel_replay.replay(
            recorded["openai"],
            fork=(selector, None),
            fork_to=new,
            upstream_openai=second.openai_url,
        ) as run:
            answers = fork_agent.run("openai")
        assert run.summary is not None and run.summary.forked_at == at
        assert [a.startswith("other") for a in answers] == [False] * (at - 1) + [True] * (5 - at)
        origins = [ex.provenance["origin"] for ex in load(new).interactions if ex.provenance]
        assert origins == ["replayed"] * (at - 1) + ["live"] * (5 - at)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("--live-from", "0"), "--live-from 0: calls are counted from 1"),
        (
            ("--live-from", "5"),
            "--live-from 5 is beyond the recording: the cassette holds 4 model calls",
        ),
        (
            ("--live-from", "tool:search"),
            "no recorded call follows a result of tool 'search' (tools with results: get_weather",
        ),
        (
            ("--live-from", "text:Oslo"),
            "--live-from text:Oslo: no recorded request holds that text",
        ),
        (
            ("--live-from", "third"),
            "tool:NAME or text:TEXT, not 'third'",
        ),
        (
            ("--live-from", "3", "--model", "claude-haiku-4-5"),
            "--model claude-haiku-4-5 is a model of anthropic, but call 3 is on the openai API",
        ),
        (("--live-from", "3", "--mode", "auto"), "it does not run in --mode auto"),
        (("--model", "gpt-4o-mini"), "--model and --fork-to go with --live-from N"),
        (("--live-from", "3", "--fork-to", "SAME"), "is the cassette forked; name another file"),
    ],
)
def test_bad_input_is_a_one_line_error(
    args: tuple[str, ...],
    error: str,
    recorded: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cassette = recorded["openai"]
    args = tuple(str(cassette) if a == "SAME" else a for a in args)
    if "--fork-to" not in args and "--model" not in args[:1]:
        args += ("--fork-to", str(tmp_path / "new.json"))
    elif args[:1] == ("--model",):
        args += ("--fork-to", str(tmp_path / "new.json"))
    code = main(["replay", "--cassette", str(cassette), *args, "--", "true"])
    err = capsys.readouterr().err
    assert code == 2
    assert error in err and err.count("\n") == 1, err
    assert not (tmp_path / "new.json").exists()


def test_another_providers_model_goes_where_an_upstream_serves_it(
    stubs: tuple[StubUpstream, StubUpstream], recorded: dict[str, Path], tmp_path: Path, keys: None
) -> None:
    """``--upstream-openai`` names an OpenAI-compatible host: it may serve a Claude model."""
    _, second = stubs
    new = tmp_path / "new.json"
    with otel_replay.replay(
        recorded["openai"],
        fork=(4, "claude-haiku-4-5"),
        fork_to=new,
        upstream_openai=second.openai_url,
    ):
        fork_agent.run("openai")
    assert chats(second)[-1]["model"] == "claude-haiku-4-5"
    assert load(new).interactions[3].provenance == {
        "call": 4,
        "origin": "live",
        "model": "claude-haiku-4-5",
    }


def test_past_the_fork_point_only_the_callers_own_key_goes_live(
    stubs: tuple[StubUpstream, StubUpstream], recorded: dict[str, Path], tmp_path: Path
) -> None:
    """Without the key in otel-replay's environment, call 3 is a miss, never forwarded."""
    _, second = stubs
    heard, new = len(second.received), tmp_path / "new.json"
    with pytest.raises(ReplayMiss, match="call 3 is past the fork point and goes live only with"):
        with otel_replay.replay(
            recorded["openai"], fork=(3, None), fork_to=new, upstream_openai=second.openai_url
        ):
            fork_agent.run("openai")
    assert len(second.received) == heard and not new.exists()


def test_a_live_call_failing_upstream_is_written_so_it_replays(
    stubs: tuple[StubUpstream, StubUpstream], recorded: dict[str, Path], tmp_path: Path, keys: None
) -> None:
    _, second = stubs
    new = tmp_path / "new.json"
    second.enqueue(Fault("status", status=503, body={"error": {"message": "overloaded"}}))
    fork = ("--live-from", "3", "--fork-to", str(new), "--upstream-openai", second.openai_url)
    done = cli("replay", "--cassette", str(recorded["openai"]), *fork, agent=("openai",))
    assert done.returncode == 1  # the agent's: it got the provider's 503
    assert "overloaded" in done.stderr and "· forked at call 3" in done.stderr
    forked = load(new)
    assert [ex.response.status for ex in forked.interactions] == [200, 200, 503]
    again = cli("replay", "--mode", "strict", "--cassette", str(new), agent=("openai",))
    assert again.returncode == 1 and "overloaded" in again.stderr
    assert "3 replayed · 0 live · 0 misses" in again.stderr


def test_a_fork_the_run_never_reaches_is_not_written(
    recorded: dict[str, Path], tmp_path: Path, keys: None
) -> None:
    new = tmp_path / "new.json"
    fork = ("--live-from", "4", "--fork-to", str(new))
    done = cli("replay", "--cassette", str(recorded["openai"]), *fork, "--", "true")
    assert done.returncode == 1
    assert (
        "new.json not written: the fork at call 4 did not happen (the run made 0 model calls)"
        in (done.stderr)
    )
    assert not new.exists()


def test_pytest_plugin_forks_one_incident_against_several_models(
    pytester: pytest.Pytester,
    stubs: tuple[StubUpstream, StubUpstream],
    recorded: dict[str, Path],
    keys: None,
) -> None:
    _, second = stubs
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        test_eval=textwrap.dedent(
            f"""
            import pytest
            import fork_agent

            @pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-4.1"])
            def test_incident(otel_replay, model):
                with otel_replay({str(recorded["openai"])!r}, fork=(3, model)) as run:
                    answers = fork_agent.run("openai")
                assert answers[2] == "other reply to: And tomorrow?"
                assert run.summary.forked_at == 3
                assert run.fork_to.name == f"openai.fork-3-{{model}}.json"
            """
        )
    )
    result = pytester.runpytest_inprocess(
        "-p", "no:hypothesispytest", f"--otel-replay-upstream-openai={second.openai_url}"
    )
    result.assert_outcomes(passed=2)
    folder = recorded["openai"].parent
    for model in ("gpt-4o-mini", "gpt-4.1"):
        live = load(folder / f"openai.fork-3-{model}.json").interactions[2]
        assert live.provenance == {"call": 3, "origin": "live", "model": model}


async def test_report_marks_the_fork_point(
    stubs: tuple[StubUpstream, StubUpstream], recorded: dict[str, Path], tmp_path: Path, keys: None
) -> None:
    _, second = stubs
    traces, page_file = tmp_path / "fork.jsonl", tmp_path / "fork.html"
    fork = ("--live-from", "3", "--model", "gpt-4o-mini", "--fork-to", str(tmp_path / "new.json"))
    done = cli(
        "replay",
        "--cassette",
        str(recorded["openai"]),
        *fork,
        "--traces",
        str(traces),
        "--upstream-openai",
        second.openai_url,
        agent=("openai",),
    )
    assert done.returncode == 0, done.stderr
    assert main(["report", str(traces), "-o", str(page_file)]) == 0
    async with browser_page() as page:
        await page.open(page_file.as_uri())
        summary = await page.eval("document.getElementById('summary').innerText")
        assert "2 replayed · 2 live" in summary
        assert "forked at call 3 · live with gpt-4o-mini" in summary
        rows = await page.eval(
            "[...document.querySelectorAll('#rows .row')].map(r => "
            "[...r.querySelectorAll('.badge')].map(b => b.innerText).join(' '))"
        )
        assert rows == ["replayed", "replayed", "live fork", "live"]
        # the fork point's line crosses every row's timeline at the same place
        lines = await page.eval(
            "[...document.querySelectorAll('.tl .fork-at')].map(b => b.style.left)"
        )
        assert len(lines) == 4 and len(set(lines)) == 1
        await page.eval("document.querySelectorAll('#rows .row')[2].click()")
        detail = await page.eval("document.getElementById('detail').innerText")
        assert "forked at call 3 · live with gpt-4o-mini" in detail


def test_the_decision_past_the_fork_point_and_the_default_target() -> None:
    assert decide_live(3, own_key=True) == Decision("forward")
    refused = decide_live(3, own_key=False)
    assert refused.action == "miss" and refused.miss is not None
    assert str(refused.miss).startswith("replay miss: call 3 is past the fork point")
    assert parse_live_from(" 3 ") == 3 and parse_live_from("text:a:b") == "text:a:b"
    cassette = Path("cassettes/incident.json")
    assert fork_target(cassette, 3, "gpt-4o-mini").name == "incident.fork-3-gpt-4o-mini.json"
    assert fork_target(cassette, "tool:get_weather", None).name == (
        "incident.fork-tool-get_weather.json"
    )
    assert fork_target(cassette, "text:And tomorrow?", "x/y").name == (
        "incident.fork-text-And-tomorrow--x-y.json"
    )


@pytest.mark.parametrize(
    ("raw", "model", "goes", "sent", "answered"),
    [
        (b'{"model":"gpt-4o","messages":[]}', "gpt-4o-mini", True, "gpt-4o-mini", "gpt-4o-mini"),
        (b'{"model":"gpt-4o","messages":[]}', None, True, None, "gpt-4o"),
        (b'{"contents":[]}', "my-model", False, None, None),  # the model in the path
        (b"", "gpt-4o-mini", True, None, "gpt-4o-mini"),  # no body: a list of models
        (b"not json", None, True, None, None),
    ],
)
def test_a_live_calls_body_takes_the_forks_model(
    raw: bytes,
    model: str | None,
    goes: bool,
    sent: str | None,
    answered: str | None,
    recorded: dict[str, Path],
) -> None:
    plan = ForkPlan(3, Path("new.json"), model)
    fork = Fork(plan, load(recorded["openai"]), recorded["openai"])
    call: Any = SimpleNamespace(raw=raw, sent=None, provenance=None)
    assert going_live(call, fork, 3) is goes
    assert (json.loads(call.sent)["model"] if call.sent else None) == sent
    if goes:
        assert call.provenance == {"call": 3, "origin": "live", "model": answered}
