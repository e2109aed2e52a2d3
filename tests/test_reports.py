"""The files a run leaves: the misses file (written, read back, removed when clean) and
the run report (one run, a test session's blocks)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from otel_replay.core.errors import ConfigError
from otel_replay.reports import write_json
from otel_replay.reports.misses import Miss, last_miss, misses_path, write_misses
from otel_replay.reports.run import Summary, combined, run_report, suite_report


def miss(n: int) -> Miss:
    return Miss(
        message=f"replay miss: messages changed ({n})",
        component="messages",
        provider="openai",
        path="/v1/chat/completions",
        body={"messages": [{"role": "user", "content": f"key sk-{n}"}]},
        used=[0, n],
    )


def test_misses_file_sits_beside_the_cassette() -> None:
    assert misses_path(Path("c/weather.json")) == Path("c/weather.misses.json")


def test_misses_are_written_redacted_and_the_last_read_back(tmp_path: Path) -> None:
    cassette = tmp_path / "c.json"
    write_misses(cassette, [miss(1), miss(2)], lambda text: text.replace("sk-", "<key>-"))
    text = misses_path(cassette).read_text(encoding="utf-8")
    assert "sk-" not in text and text.endswith("}\n")
    doc = json.loads(text)
    assert doc["cassette"] == str(cassette)
    assert list(doc["misses"][0]) == ["message", "component", "provider", "path", "body", "used"]
    last = last_miss(cassette)
    assert last is not None
    assert last["message"] == miss(2).message and last["used"] == [0, 2]
    assert last["body"]["messages"][0]["content"] == "key <key>-2"


def test_a_clean_run_removes_the_misses_file(tmp_path: Path) -> None:
    cassette = tmp_path / "c.json"
    write_misses(cassette, [miss(1)], str)
    write_misses(cassette, [], str)
    assert not misses_path(cassette).exists()
    assert last_miss(cassette) is None


@pytest.mark.parametrize("content", ["not json", "[]", '{"other": 1}', '{"misses": 3}'])
def test_a_file_that_is_not_a_misses_file_is_a_config_error(tmp_path: Path, content: str) -> None:
    cassette = tmp_path / "c.json"
    misses_path(cassette).write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"c\.misses\.json: not a misses file"):
        last_miss(cassette)


def test_an_empty_misses_list_has_no_last_miss(tmp_path: Path) -> None:
    cassette = tmp_path / "c.json"
    misses_path(cassette).write_text('{"misses": []}', encoding="utf-8")
    assert last_miss(cassette) is None


def test_run_report_is_the_summary_with_miss_details() -> None:
    summary = Summary(mode="strict", replayed=2, misses=[miss(1).message], spans_received=3)
    report = run_report(summary, [miss(1)])
    assert {k: v for k, v in report.items() if k != "miss_details"} == summary.to_json()
    assert report["miss_details"] == [
        {
            "message": miss(1).message,
            "component": "messages",
            "provider": "openai",
            "path": "/v1/chat/completions",
        }
    ]


@dataclass
class Block:
    nodeid: str
    cassette: str
    mode: str
    summary: Summary
    outcome: str = "passed"


def test_suite_report_totals_every_block() -> None:
    one = Summary(mode="strict", replayed=2, spans_received=1)
    two = Summary(mode="auto", live=1, misses=["replay miss: x"], spans_received=4)
    totals = combined([one, two], "mixed")
    assert (totals.replayed, totals.live, totals.misses, totals.spans_received) == (
        2,
        1,
        ["replay miss: x"],
        5,
    )
    blocks = [
        Block("t.py::a", "c/a.json", "strict", one),
        Block("t.py::b", "b.json", "auto", two, "not evaluated"),
    ]
    report = suite_report(totals, blocks, ["egress blocked: example.com"])
    assert list(report) == ["totals", "outcomes", "blocked", "blocks"]
    assert report["totals"] == totals.to_json()
    assert report["outcomes"] == {"passed": 1, "failed": 0, "not evaluated": 1}
    assert report["blocked"] == ["egress blocked: example.com"]
    assert report["blocks"][1] == {
        "test": "t.py::b",
        "cassette": "b.json",
        **two.to_json(),
        "mode": "auto",
        "outcome": "not evaluated",
    }


def test_write_json_is_indented_with_a_newline_and_fails_loudly(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "r.json"
    write_json(path, {"a": [1]})
    assert path.read_text(encoding="utf-8") == '{\n  "a": [\n    1\n  ]\n}\n'
    (tmp_path / "taken").mkdir()
    with pytest.raises(ConfigError, match="taken: cannot write"):
        write_json(tmp_path / "taken", {})
