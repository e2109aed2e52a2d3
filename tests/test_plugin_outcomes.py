"""The pytest plugin's three outcomes, and running only the tests a changed cassette touches.

In ``auto`` mode, a miss that cannot go live because no key of the provider is set leaves
its test *not evaluated*: skipped with the reason ``not evaluated: replay miss: …``
(``--otel-replay-strict`` or ``OTEL_REPLAY_STRICT=1``: failed). ``--otel-replay-changed``
runs only the tests whose cassettes differ from git, by the map each run writes to
``.otel-replay/tests.json``. The inner suite asks the real ``openai`` SDK; a stub upstream
started here is the provider; the runs that matter go through two pytest-xdist workers.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import openai  # noqa: F401  imported once here: inner in-process runs reuse it
import pytest

from otel_replay.testing.stub import StubUpstream, run_stub

pytest_plugins = ["pytester"]

SUITE = textwrap.dedent(
    """
    import json, pathlib
    import openai, pytest

    PROMPTS = json.loads((pathlib.Path(__file__).parent / "prompts.json").read_text())

    def ask(text):
        with openai.OpenAI(max_retries=0) as client:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": text}]
            )
        return reply.choices[0].message.content

    @pytest.mark.parametrize("name", sorted(PROMPTS))
    def test_ask(otel_replay, name):
        with otel_replay(name):
            assert ask(PROMPTS[name]) == f"stub reply to: {PROMPTS[name]}"

    def test_shared_twice(otel_replay):
        with otel_replay("shared"):
            assert ask("shared question").startswith("stub reply")

    def test_plain():
        assert True
    """
)
PROMPTS = {"alpha": "what is alpha?", "beta": "what is beta?"}
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
UNUSED_PLUGINS = ("-p", "no:hypothesispytest", "-p", "no:langsmith_plugin", "-p", "no:anyio")
TIMEOUT = 120


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[StubUpstream]:
    """The inner suite recorded with a key from a stub upstream; then no key is set."""
    pytester.makeini(INI)
    pytester.makepyfile(test_suite=SUITE)
    prompts(pytester, PROMPTS)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("OTEL_REPLAY_STRICT", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-outcomes-0000")
    with run_stub() as stub:
        recorded = run(
            pytester, "--otel-replay=record", f"--otel-replay-upstream-openai={stub.openai_url}"
        )
        recorded.assert_outcomes(passed=4)
        monkeypatch.delenv("OPENAI_API_KEY")
        stub.received.clear()
        yield stub


def prompts(pytester: pytest.Pytester, texts: dict[str, str]) -> None:
    (pytester.path / "prompts.json").write_text(json.dumps(texts))


def run(pytester: pytest.Pytester, *args: str, xdist: bool = False) -> pytest.RunResult:
    if xdist:
        return pytester.runpytest_subprocess(*UNUSED_PLUGINS, "-n", "2", *args, timeout=TIMEOUT)
    return pytester.runpytest_inprocess(*UNUSED_PLUGINS, "-p", "no:xdist", *args)


def test_a_keyless_auto_miss_is_not_evaluated_and_strict_fails_it(
    pytester: pytest.Pytester, suite: StubUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A changed prompt, auto mode, no OPENAI_API_KEY: the test is skipped as not
    evaluated (the others replay), under two xdist workers; the report counts the three
    outcomes apart. ``--otel-replay-strict`` fails it, as does ``OTEL_REPLAY_STRICT=1``;
    strict mode fails it as before, and with a key the miss goes live."""
    prompts(pytester, {**PROMPTS, "beta": "what is beta, now?"})
    report = pytester.path / "report.json"
    tests_map = pytester.path / ".otel-replay" / "tests.json"
    tests_map.unlink()  # written again from both workers' blocks
    auto = run(pytester, "--otel-replay=auto", f"--otel-replay-report={report}", "-rs", xdist=True)
    auto.assert_outcomes(passed=3, skipped=1)
    auto.stdout.fnmatch_lines(
        [
            "*otel-replay: 2 replayed · 0 live · 1 miss · *3 blocks · 1 not evaluated",
            "SKIPPED [[]1[]] test_suite.py:*: not evaluated: replay miss: messages changed*",
        ]
    )
    doc = json.loads(report.read_text())
    assert doc["outcomes"] == {"passed": 2, "failed": 0, "not evaluated": 1}
    (block,) = [b for b in doc["blocks"] if b["outcome"] == "not evaluated"]
    assert block["test"] == "test_suite.py::test_ask[beta]" and block["keyless_misses"] == 1
    assert suite.received == []  # nothing went live without a key
    assert sorted(json.loads(tests_map.read_text())["tests"]) == [
        "test_suite.py::test_ask[alpha]",
        "test_suite.py::test_ask[beta]",
        "test_suite.py::test_shared_twice",
    ]

    markdown = pytester.path / "report.md"
    run(pytester, "--otel-replay=auto", f"--otel-replay-report={markdown}").assert_outcomes(
        passed=3, skipped=1
    )
    assert "3 misses" not in markdown.read_text()
    assert "1 miss" in markdown.read_text() and " · 1 not evaluated" in markdown.read_text()

    strict = run(pytester, "--otel-replay=auto", "--otel-replay-strict", xdist=True)
    strict.assert_outcomes(passed=3, failed=1)
    strict.stdout.fnmatch_lines(["FAILED test_suite.py::test_ask[[]beta[]]*"])
    assert "not evaluated" not in strict.stdout.str()

    monkeypatch.setenv("OTEL_REPLAY_STRICT", "1")
    run(pytester, "--otel-replay=auto").assert_outcomes(passed=3, failed=1)
    monkeypatch.delenv("OTEL_REPLAY_STRICT")
    run(pytester, "--otel-replay=strict").assert_outcomes(passed=3, failed=1)

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-outcomes-0000")  # a key: the miss goes live
    upstream = f"--otel-replay-upstream-openai={suite.openai_url}"
    run(pytester, "--otel-replay=auto", upstream).assert_outcomes(passed=4)
    assert len(suite.received) == 1


def git(folder: Path, *args: str) -> str:
    who = ("-c", "user.name=otel-replay tests", "-c", "user.email=tests@otel-replay.invalid")
    done = subprocess.run(
        ["git", *who, *args], cwd=folder, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_changed_runs_only_the_tests_of_changed_cassettes(
    pytester: pytest.Pytester, suite: StubUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recording run mapped each test to its cassettes. Nothing changed: only the test
    the map does not know runs. One cassette changed in the working tree: its test runs
    too; against an older ref, every test whose cassette changed since. Under two xdist
    workers, whose runs merge into the map."""
    monkeypatch.setenv("CI", "true")  # strict: every test that runs replays
    tests = json.loads((pytester.path / ".otel-replay" / "tests.json").read_text())["tests"]
    assert tests == {
        "test_suite.py::test_ask[alpha]": ["cassettes/alpha.json"],
        "test_suite.py::test_ask[beta]": ["cassettes/beta.json"],
        "test_suite.py::test_shared_twice": ["cassettes/shared.json"],
    }
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "-m", "recorded")

    same = run(pytester, "--otel-replay-changed", "-v", xdist=True)
    same.assert_outcomes(passed=1)  # each worker deselects alike: the controller sees 1
    same.stdout.fnmatch_lines(["2 workers [[]1 item[]]", "*PASSED test_suite.py::test_plain*"])

    beta = pytester.path / "cassettes" / "beta.json"
    beta.write_text(beta.read_text() + "\n")
    one = run(pytester, "--otel-replay-changed", "-v", xdist=True)
    one.assert_outcomes(passed=2)
    one.stdout.fnmatch_lines(["2 workers [[]2 items[]]"])
    one.stdout.fnmatch_lines(["*PASSED test_suite.py::test_ask[[]beta[]]*"])
    assert "test_ask[alpha]" not in one.stdout.str()

    # the xdist runs merged what their workers ran into the map, keeping the tests left out
    assert json.loads((pytester.path / ".otel-replay" / "tests.json").read_text())["tests"] == tests
    git(pytester.path, "commit", "-q", "-am", "beta again")
    since = run(pytester, "--otel-replay-changed=HEAD~1")
    since.assert_outcomes(passed=2, deselected=2)

    bad = run(pytester, "--otel-replay-changed=no-such-ref")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*otel-replay: --otel-replay-changed: git diff: *no-such-ref*"])
