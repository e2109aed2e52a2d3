"""The pytest plugin at suite scale: cassettes shared by several tests, in every mode,
with and without pytest-xdist, and re-recording part of a suite.

The inner suite's tests ask the real ``openai`` and ``anthropic`` SDKs one question each
(the questions are in ``prompts.json``, so a test can change one); some tests share the
cassette ``shared``, the others have one each. A stub upstream started here is the
provider. Runs without xdist are in-process; runs with ``-n 2`` are subprocesses.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from typing import Any

import anthropic  # noqa: F401  imported once here: inner in-process runs reuse it
import openai  # noqa: F401
import pytest

from otel_replay.cassette.model import load
from otel_replay.frontends.suite import BlockResult
from otel_replay.reports.run import Summary
from otel_replay.reports.suite import compare, unused_recordings
from otel_replay.testing.stub import StubUpstream, run_stub

pytest_plugins = ["pytester"]

SUITE = textwrap.dedent(
    """
    import json, pathlib
    import openai, pytest

    PROMPTS = json.loads((pathlib.Path(__file__).parent / "prompts.json").read_text())

    def ask(text):
        if text.startswith("claude"):
            import anthropic  # only where used: the xdist runs start faster without it

            with anthropic.Anthropic(max_retries=0) as client:
                reply = client.messages.create(
                    model="claude-haiku-4-5", max_tokens=64,
                    messages=[{"role": "user", "content": text}],
                )
            return reply.content[0].text
        with openai.OpenAI(max_retries=0) as client:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": text}]
            )
        return reply.choices[0].message.content

    @pytest.mark.parametrize("text", PROMPTS["shared"])
    def test_shared(otel_replay, text):
        if text.startswith("skip"):
            pytest.skip("a skipped test never opens its block")
        with otel_replay("shared"):
            assert ask(text) == f"stub reply to: {text}"

    @pytest.mark.parametrize("name", sorted(PROMPTS["own"]))
    def test_own(otel_replay, name):
        with otel_replay(name):
            assert ask(PROMPTS["own"][name]) == f"stub reply to: {PROMPTS['own'][name]}"
    """
)

SHARED = ["claude one", "gpt two", "gpt three", "claude four"]
OWN = {"alpha": "gpt alpha", "beta": "claude beta"}
# with xdist, every worker imports the SDKs its tests use; openai alone starts sooner
XDIST_SHARED = ["gpt one", "gpt two", "gpt three", "gpt four"]
XDIST_OWN = {"alpha": "gpt alpha", "beta": "gpt beta"}
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
# the inner runs show the unused warning instead of failing on it (the outer suite's
# filterwarnings = error reaches in-process runs)
WARN_INI = INI + "filterwarnings = default::pytest.PytestWarning\n"
TIMEOUT = 120


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[StubUpstream]:
    """The inner suite, keys for recording, and the stub upstream it records from."""
    pytester.makeini(WARN_INI)
    pytester.makepyfile(test_suite=SUITE)
    prompts(pytester, SHARED, OWN)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-suite-0000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-suite-0000")
    with run_stub() as stub:
        yield stub


def prompts(pytester: pytest.Pytester, shared: list[str], own: dict[str, str]) -> None:
    (pytester.path / "prompts.json").write_text(json.dumps({"shared": shared, "own": own}))


def upstreams(stub: StubUpstream) -> list[str]:
    return [
        f"--otel-replay-upstream-openai={stub.openai_url}",
        f"--otel-replay-upstream-anthropic={stub.anthropic_url}",
    ]


# plugins the inner suite does not use, left out so that each xdist worker starts sooner
UNUSED_PLUGINS = ("-p", "no:hypothesispytest", "-p", "no:langsmith_plugin", "-p", "no:anyio")


def run(pytester: pytest.Pytester, *args: str, xdist: bool = False) -> pytest.RunResult:
    """One inner run: in-process, or as a subprocess with two pytest-xdist workers."""
    if xdist:
        return pytester.runpytest_subprocess(*UNUSED_PLUGINS, "-n", "2", *args, timeout=TIMEOUT)
    return pytester.runpytest_inprocess(*UNUSED_PLUGINS, "-p", "no:xdist", *args)


def recorded(pytester: pytest.Pytester, name: str) -> list[str]:
    """The user texts a cassette's interactions answer, in file order."""
    cassette = load(pytester.path / "cassettes" / f"{name}.json")
    return [ex.request.messages[-1]["parts"][0]["content"] for ex in cassette.interactions]


def cassettes(pytester: pytest.Pytester) -> dict[str, bytes]:
    """Every cassette file's bytes, by name."""
    return {p.name: p.read_bytes() for p in (pytester.path / "cassettes").glob("*.json")}


def drop_a_shared_test(
    pytester: pytest.Pytester, shared: list[str] = SHARED, own: dict[str, str] = OWN
) -> int:
    """The second shared test is gone; returns the index of its recording."""
    index = recorded(pytester, "shared").index(shared[1])
    prompts(pytester, [t for t in shared if t != shared[1]], own)
    return index


def assert_unused_once(result: pytest.RunResult, index: int) -> None:
    """The run passed and warned once, about recording ``index`` of shared.json only."""
    result.assert_outcomes(passed=5, warnings=1)
    out = result.stdout.str()
    assert out.count("not used by any test") == 1, out
    result.stdout.fnmatch_lines(
        [f"*OtelReplayUnusedWarning: otel-replay: 1 recording in *shared.json*not used*: #{index}"]
    )


def stale_shared(pytester: pytest.Pytester, stub: StubUpstream) -> None:
    """cassettes/shared.json holding one recording no test asks for."""
    prompts(pytester, ["gpt stale"], {})
    run(pytester, "--otel-replay=record", *upstreams(stub)).assert_outcomes(passed=1, skipped=1)
    prompts(pytester, SHARED, OWN)
    assert recorded(pytester, "shared") == ["gpt stale"]


def test_record_then_strict_keeps_every_recording_of_a_shared_cassette(
    pytester: pytest.Pytester, suite: StubUpstream
) -> None:
    """Record: the first block to write ``shared`` starts it afresh (the stale recording
    goes), every later block appends (all four stay). The strict run that follows replays
    every test, writes nothing, and finds nothing unused."""
    stale_shared(pytester, suite)
    result = run(pytester, "--otel-replay=record", *upstreams(suite))
    result.assert_outcomes(passed=6)
    assert recorded(pytester, "shared") == SHARED
    assert recorded(pytester, "alpha") == ["gpt alpha"]
    result.stdout.fnmatch_lines(
        [
            "*0 replayed · 6 live · 0 misses*6 blocks",
            "wrote cassettes/alpha.json: 1 interaction (new)",
            "wrote cassettes/beta.json: 1 interaction (new)",
            "wrote cassettes/shared.json: 4 interactions (was 1): +4 added, −1 removed",
        ]
    )
    before = cassettes(pytester)
    suite.received.clear()
    report = pytester.path / "report.json"
    strict = run(pytester, "--otel-replay=strict", f"--otel-replay-report={report}")
    strict.assert_outcomes(passed=6, warnings=0)
    assert suite.received == []
    assert cassettes(pytester) == before
    assert "wrote" not in strict.stdout.str()
    doc = json.loads(report.read_text())
    assert doc["totals"]["replayed"] == 6
    assert doc["unused"] == {} and doc["cassettes"] == []


def test_auto_appends_from_every_block_and_reports_unused_recordings_once(
    pytester: pytest.Pytester, suite: StubUpstream
) -> None:
    """Auto on fresh cassettes: every block's live calls are appended. Run again,
    everything replays, and no test's recordings count as unused for the others; with
    one test gone, its recording is reported once, and only it — as a warning, or with
    ``--otel-replay-unused=error`` (or a warning filter that makes it an error) as a
    failed run."""
    first = run(pytester, "--otel-replay=auto", *upstreams(suite))
    first.assert_outcomes(passed=6, warnings=0)
    assert recorded(pytester, "shared") == SHARED
    first.stdout.fnmatch_lines(["wrote cassettes/shared.json: 4 interactions (new)"])
    suite.received.clear()
    again = run(pytester, "--otel-replay=auto", *upstreams(suite))
    again.assert_outcomes(passed=6, warnings=0)
    assert suite.received == []
    assert "wrote" not in again.stdout.str()
    index = drop_a_shared_test(pytester)
    strict = run(pytester, "--otel-replay=strict")
    assert_unused_once(strict, index)
    failed = run(pytester, "--otel-replay=strict", "--otel-replay-unused=error")
    failed.assert_outcomes(passed=5)
    assert failed.ret == pytest.ExitCode.TESTS_FAILED
    failed.stdout.fnmatch_lines([f"error: otel-replay: 1 recording in *shared.json*#{index}"])
    # a project's filterwarnings = error makes the warning an error the same way
    filtered = run(pytester, "--otel-replay=strict", "-W", "error::pytest.PytestWarning")
    filtered.assert_outcomes(passed=5)
    assert filtered.ret == pytest.ExitCode.TESTS_FAILED
    filtered.stdout.fnmatch_lines([f"error: otel-replay: 1 recording in *shared.json*#{index}"])


def test_with_xdist_nothing_is_lost_and_the_run_is_reported_as_one(
    pytester: pytest.Pytester, suite: StubUpstream
) -> None:
    """``-n 2``: auto on fresh cassettes keeps every worker's recordings; a strict run
    replays them all, reports an unused recording once for the whole run, and writes one
    report for every block of both workers; a record run then starts ``shared`` afresh
    in one worker and appends from both."""
    prompts(pytester, XDIST_SHARED, XDIST_OWN)
    auto = run(pytester, "--otel-replay=auto", *upstreams(suite), xdist=True)
    auto.assert_outcomes(passed=6)
    assert sorted(recorded(pytester, "shared")) == sorted(XDIST_SHARED)
    assert recorded(pytester, "beta") == ["gpt beta"]
    before = cassettes(pytester)
    index = drop_a_shared_test(pytester, XDIST_SHARED, XDIST_OWN)
    suite.received.clear()
    report = pytester.path / "report.json"
    strict = run(pytester, "--otel-replay=strict", f"--otel-replay-report={report}", xdist=True)
    assert_unused_once(strict, index)
    assert suite.received == [] and cassettes(pytester) == before
    doc = json.loads(report.read_text())
    assert doc["totals"]["replayed"] == 5
    assert sorted(b["test"] for b in doc["blocks"]) == sorted(
        [f"test_suite.py::test_shared[{t}]" for t in XDIST_SHARED if t != "gpt two"]
        + ["test_suite.py::test_own[alpha]", "test_suite.py::test_own[beta]"]
    )
    assert list(doc["unused"].values()) == [[index]]
    record = run(pytester, "--otel-replay=record", *upstreams(suite), xdist=True)
    record.assert_outcomes(passed=5)
    record.stdout.fnmatch_lines(
        ["wrote cassettes/shared.json: 3 interactions (was 4): +0 added, −1 removed"]
    )
    assert sorted(recorded(pytester, "shared")) == ["gpt four", "gpt one", "gpt three"]
    run(pytester, "--otel-replay=strict").assert_outcomes(passed=5, warnings=0)


def test_rerecording_part_of_a_suite_rewrites_only_its_cassettes_and_explains_the_change(
    pytester: pytest.Pytester, suite: StubUpstream
) -> None:
    """``-k shared`` after one shared prompt changed: only shared.json is rewritten, and
    the end report says one interaction was added and one removed. A partial strict run
    does not call the recordings of deselected or skipped tests unused."""
    run(pytester, "--otel-replay=record", *upstreams(suite)).assert_outcomes(passed=6)
    own = {p.name: p.read_bytes() for p in (pytester.path / "cassettes").glob("[ab]*.json")}
    changed = [*SHARED[:2], "gpt three, shorter", SHARED[3]]
    prompts(pytester, changed, OWN)
    result = run(pytester, "--otel-replay=record", "-k", "shared", *upstreams(suite))
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        ["wrote cassettes/shared.json: 4 interactions (was 4): +1 added, −1 removed"]
    )
    assert "alpha.json" not in result.stdout.str()
    assert {p.name: p.read_bytes() for p in (pytester.path / "cassettes").glob("[ab]*.json")} == own
    assert sorted(recorded(pytester, "shared")) == sorted(changed)
    run(pytester, "--otel-replay=strict").assert_outcomes(passed=6, warnings=0)
    partial = run(pytester, "--otel-replay=strict", "-k", "claude")
    partial.assert_outcomes(passed=2, deselected=4, warnings=0)
    partial.stdout.fnmatch_lines(
        ["otel-replay: unused recordings not looked for: 4 tests deselected"]
    )
    prompts(pytester, [*changed[:3], "skip: its recording would look unused"], OWN)
    skipped = run(pytester, "--otel-replay=strict")
    skipped.assert_outcomes(passed=5, skipped=1, warnings=0)
    skipped.stdout.fnmatch_lines(["otel-replay: unused recordings not looked for: 1 test skipped"])


def test_misses_of_every_block_stay_for_why(pytester: pytest.Pytester, suite: StubUpstream) -> None:
    """Two tests missing on the shared cassette and one hitting after them: the misses
    file keeps both misses (a block without a miss does not remove it)."""
    run(pytester, "--otel-replay=record", *upstreams(suite)).assert_outcomes(passed=6)
    prompts(pytester, ["claude one, changed", "gpt two, changed", *SHARED[2:]], OWN)
    result = run(pytester, "--otel-replay=strict")
    result.assert_outcomes(passed=4, failed=2)
    misses = json.loads((pytester.path / "cassettes" / "shared.misses.json").read_text())
    assert len(misses["misses"]) == 2
    assert all(m["message"].startswith("replay miss: messages changed") for m in misses["misses"])


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (None, [("a", "1")], (None, 1, 1, 0, 0)),
        ([("a", "1")], [("a", "1")], (1, 1, 0, 0, 0)),
        ([("a", "1"), ("b", "1")], [("a", "1"), ("c", "1")], (2, 2, 1, 1, 0)),
        ([("a", "1"), ("a", "2")], [("a", "1"), ("a", "3")], (2, 2, 0, 0, 1)),
        ([("a", "1"), ("a", "1")], [("a", "1")], (2, 1, 0, 1, 0)),
        ([], [("a", "1"), ("a", "1")], (0, 2, 2, 0, 0)),
    ],
    ids=["new", "same", "one-replaced", "response-changed", "repeat-gone", "was-empty"],
)
def test_changes_pair_interactions_by_request(
    before: list[tuple[str, str]] | None,
    after: list[tuple[str, str]],
    expected: tuple[int | None, int, int, int, int],
) -> None:
    change = compare("c.json", before, after)
    assert (change.before, change.after, change.added, change.removed, change.changed) == expected


def test_unused_is_decided_over_every_block_of_a_cassette() -> None:
    def block(cassette: str, mode: str, hits: list[int], loaded: int, clean: bool = True) -> Any:
        return BlockResult("t", cassette, mode, Summary(mode=mode, hits=hits), loaded, clean)

    blocks = [
        block("shared", "strict", [0, 2], 5),
        block("shared", "auto", [1, 5], 5),  # 5: appended by this block, so used
        block("grown", "auto", [0], 1),
        block("grown", "auto", [], 2),  # #1 was appended during the run by the other
        block("rewritten", "record", [], 0),
        block("rewritten", "strict", [], 3),
        block("failed", "strict", [], 2, clean=False),
    ]
    assert unused_recordings(blocks) == {"shared": [3, 4]}
