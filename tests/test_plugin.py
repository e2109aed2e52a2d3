"""The pytest plugin, tested the way its users meet it: write a test file, run pytest on it.

Inner sessions run in-process (``runpytest_inprocess``); a stub upstream started here is
the provider while recording and is stopped before replaying.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import openai  # imported once here: inner in-process runs reuse it
import pytest

from otel_replay.frontends import api
from otel_replay.testing.stub import run_stub

pytest_plugins = ["pytester"]

HEADER = textwrap.dedent(
    """
    import os, socket, subprocess, sys
    import openai, pytest

    def ask(*texts):
        answers = []
        with openai.OpenAI(max_retries=0) as client:
            for text in texts:
                reply = client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": text}]
                )
                answers.append(reply.choices[0].message.content)
        return answers

    def ask_quietly(*texts):
        try:
            return ask(*texts)
        except openai.APIError as exc:
            return [str(exc)]
    """
)


INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def write_tests(pytester: pytest.Pytester, body: str, name: str = "test_agent") -> Path:
    pytester.makeini(INI)
    return pytester.makepyfile(**{name: HEADER + textwrap.dedent(body)})


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """An in-process inner session, without plugins that would re-import themselves."""
    return pytester.runpytest_inprocess("-p", "no:hypothesispytest", *args)


def _ask(*texts: str) -> list[str]:
    answers = []
    with openai.OpenAI(max_retries=0) as client:
        for text in texts:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": text}]
            )
            answers.append(reply.choices[0].message.content or "")
    return answers


@pytest.fixture(scope="module")
def hello_cassette(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two calls recorded once for the module with the Python API against a stub."""
    path = tmp_path_factory.mktemp("recorded") / "hello.json"
    with pytest.MonkeyPatch.context() as mp, run_stub() as stub:
        mp.setenv("OPENAI_API_KEY", "sk-test-plugin-0000")
        with api.record(path, upstream_openai=stub.openai_url):
            assert _ask("hi", "bye") == ["stub reply to: hi", "stub reply to: bye"]
    return path


@pytest.fixture
def recorded(pytester: pytest.Pytester, hello_cassette: Path) -> Path:
    """cassettes/hello.json beside the inner test file."""
    target = pytester.path / "cassettes" / "hello.json"
    target.parent.mkdir()
    target.write_bytes(hello_cassette.read_bytes())
    return target


def test_records_with_the_fixture(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Record mode forwards to the stub and writes cassettes/NAME.json beside the test;
    the replay afterwards needs no upstream."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-plugin-0000")
    write_tests(
        pytester,
        """
        def test_hello(otel_replay):
            with otel_replay("hello"):
                assert ask("hi", "bye") == ["stub reply to: hi", "stub reply to: bye"]
        """,
        name="test_record",
    )
    with run_stub() as stub:
        result = run(
            pytester, "--otel-replay=record", f"--otel-replay-upstream-openai={stub.openai_url}"
        )
        assert len(stub.received) == 2
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*0 replayed · 2 live · 0 misses*", "*wrote *hello.json*"])
    monkeypatch.delenv("OPENAI_API_KEY")
    cassette = pytester.path / "cassettes" / "hello.json"
    assert len(json.loads(cassette.read_text())["interactions"]) == 2
    replayed = run(pytester, "--otel-replay=strict")
    replayed.assert_outcomes(passed=1)


def test_replays_offline_and_reports_a_summary(pytester: pytest.Pytester, recorded: Path) -> None:
    write_tests(
        pytester,
        """
        def test_hello(otel_replay):
            with otel_replay("hello") as gw:
                assert os.environ["OPENAI_BASE_URL"] == gw.url + "/v1"
                assert ask("hi", "bye") == ["stub reply to: hi", "stub reply to: bye"]
            assert gw.summary.replayed == 2
        """,
    )
    report = pytester.path / "report.json"
    result = run(pytester, "--otel-replay=strict", f"--otel-replay-report={report}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*otel-replay*", "otel-replay: 2 replayed · 0 live · 0 misses · * spans received*"]
    )
    doc = json.loads(report.read_text())
    assert doc["totals"]["replayed"] == 2
    assert doc["blocks"][0]["test"] == "test_agent.py::test_hello"
    assert doc["blocks"][0]["mode"] == "strict"


def test_a_changed_prompt_fails_with_the_miss_even_if_swallowed(
    pytester: pytest.Pytester, recorded: Path
) -> None:
    write_tests(
        pytester,
        """
        def test_changed(otel_replay):
            with otel_replay("hello"):
                ask_quietly("hello there")

        @pytest.mark.xfail(reason="a miss is never expected")
        def test_changed_xfail(otel_replay):
            with otel_replay("hello"):
                ask("hello there")

        @pytest.mark.xfail(reason="a miss is never expected")
        def test_swallowed_in_xfail(otel_replay):
            with pytest.raises(Exception):
                with otel_replay("hello"):
                    ask_quietly("hello there")
        """,
    )
    result = run(pytester, "--otel-replay=strict")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*replay miss: messages changed (hash *→*)*"])
    assert (recorded.parent / "hello.misses.json").exists()


def test_marker_and_ci_default_mode(
    pytester: pytest.Pytester, recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    write_tests(
        pytester,
        """
        def test_default_is_strict_in_ci(otel_replay):
            with otel_replay("hello") as gw:
                ask("hi", "bye")
            assert gw.mode == "strict"

        @pytest.mark.otel_replay(cassette="cassettes/hello.json", mode="auto")
        def test_marker(otel_replay):
            with otel_replay() as gw:
                ask("hi", "bye")
            assert gw.mode == "auto"

        def test_missing_cassette(otel_replay):
            with otel_replay("nowhere"):
                pass
        """,
    )
    result = run(
        pytester,
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*nowhere.json*no such cassette*--otel-replay=record*"])


def test_environment_is_restored_and_async_agents_work(
    pytester: pytest.Pytester, recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://example.invalid/v1")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    write_tests(
        pytester,
        """
        def test_restored(otel_replay):
            before = dict(os.environ)
            with otel_replay("hello") as gw:
                assert os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] == gw.url
                ask("hi", "bye")
            assert dict(os.environ) == before
            # OTLP points at the session's gateway outside blocks too (set before import)
            assert os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] == gw.url

        @pytest.mark.asyncio
        async def test_async(otel_replay):
            async with otel_replay("hello"):
                async with openai.AsyncOpenAI(max_retries=0) as client:
                    for text in ("hi", "bye"):
                        reply = await client.chat.completions.create(
                            model="gpt-4o-mini", messages=[{"role": "user", "content": text}]
                        )
                        assert reply.choices[0].message.content == f"stub reply to: {text}"
        """,
    )
    result = run(pytester, "--otel-replay=strict")
    result.assert_outcomes(passed=2)
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in os.environ  # restored when the session ends


def test_an_agent_in_a_subprocess_inherits_the_environment(
    pytester: pytest.Pytester, recorded: Path
) -> None:
    write_tests(
        pytester,
        """
        CHILD = '''
        import openai
        with openai.OpenAI(max_retries=0) as client:
            for text in ("hi", "bye"):
                reply = client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": text}]
                )
                print(reply.choices[0].message.content)
        '''

        def test_child(otel_replay):
            with otel_replay("hello") as gw:
                out = subprocess.run(
                    [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True
                ).stdout
            assert out.splitlines() == ["stub reply to: hi", "stub reply to: bye"]
            assert gw.summary.replayed == 2
        """,
    )
    result = run(pytester, "--otel-replay=strict")
    result.assert_outcomes(passed=1)


def test_unused_recordings_warn_or_fail(pytester: pytest.Pytester, recorded: Path) -> None:
    write_tests(
        pytester,
        """
        def test_half(otel_replay):
            with otel_replay("hello"):
                assert ask("hi") == ["stub reply to: hi"]
        """,
    )
    pytester.makeini(INI + "filterwarnings = default::pytest.PytestWarning\n")
    warned = run(pytester, "--otel-replay=strict")
    warned.assert_outcomes(passed=1, warnings=1)
    warned.stdout.fnmatch_lines(["*OtelReplayUnusedWarning*1 recording in *hello.json*#1*"])
    assert warned.ret == 0
    failed = run(pytester, "--otel-replay=strict", "--otel-replay-unused=error")
    failed.assert_outcomes(passed=1)  # the run fails, at its end, once
    failed.stdout.fnmatch_lines(["error: *1 recording in *hello.json was not used by any test: #1"])
    assert failed.ret == pytest.ExitCode.TESTS_FAILED


def test_egress_guard_fails_a_test_that_reaches_a_provider(pytester: pytest.Pytester) -> None:
    write_tests(
        pytester,
        """
        def test_direct():
            try:
                socket.getaddrinfo("api.openai.com", 443)
            except OSError:
                pass

        def test_sdk_with_hardcoded_url():
            client = openai.OpenAI(api_key="sk-x", base_url="https://api.anthropic.com/v1",
                                   max_retries=0)
            with pytest.raises(openai.APIConnectionError):
                client.models.list()

        def test_loopback_is_fine():
            socket.getaddrinfo("127.0.0.1", 80)
        """,
    )
    result = run(pytester, "--otel-replay-egress=block")
    result.assert_outcomes(failed=2, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*blocked a connection to model provider host 'api.openai.com'*",
            "*blocked a connection to model provider host 'api.anthropic.com'*",
        ]
    )
