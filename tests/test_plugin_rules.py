"""The pytest plugin finds the rule file as the command line does: in the current
directory or beside the cassette; a bad one fails the test with its one-line error."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_plugin import hello_cassette, recorded, run, write_tests

pytest_plugins = ["pytester"]
__all__ = ["hello_cassette", "recorded"]

TEST = """
def test_hello(otel_replay):
    with otel_replay("hello"):
        assert ask("hi", "ciao") == ["stub reply to: hi", "stub reply to: bye"]
"""
WORD = '[[volatile]]\nkind = "word"\npattern = "bye|ciao"\n'


@pytest.mark.parametrize("where", ["cwd", "beside the cassette"])
def test_a_rule_file_turns_a_miss_into_a_hit(
    pytester: pytest.Pytester, recorded: Path, where: str
) -> None:
    write_tests(pytester, TEST)
    run(pytester, "--otel-replay=strict").assert_outcomes(failed=1)
    folder = pytester.path if where == "cwd" else recorded.parent
    (folder / "otel-replay.toml").write_text(WORD)
    run(pytester, "--otel-replay=strict").assert_outcomes(passed=1)


def test_a_bad_rule_file_fails_the_block_in_one_line(
    pytester: pytest.Pytester, recorded: Path
) -> None:
    write_tests(pytester, TEST)
    (recorded.parent / "otel-replay.toml").write_text('[[volatile]]\nkind = "w"\npattern = "("\n')
    result = run(pytester, "--otel-replay=strict")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert 'otel-replay: cassettes/otel-replay.toml:3: [[volatile]] #1: pattern "("' in out
    assert "During handling" not in out and "Traceback" not in out
