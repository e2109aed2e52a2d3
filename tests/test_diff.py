"""``otel-replay diff``: two runs of a real tool-calling agent (the openai SDK against the
stub upstream, recorded through the gateway with its own spans) that differ at one kind
of step each, and equal runs; trace files and cassettes on either side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_runs import record, replay_missing

from otel_replay.frontends.cli import main
from otel_replay.reports.diff import diff_trajectories
from otel_replay.reports.trajectory import load_trajectory
from otel_replay.testing.stub import run_stub


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("runs")
    out: dict[str, Path] = {}
    with run_stub() as stub:
        for name, variant in {
            "base": {},
            "again": {},
            "extra_tool": {"extra_tool": True},
            "argument": {"argument": "Oslo"},
            "extra_turn": {"extra_turn": True},
        }.items():
            out[name + ".json"], out[name] = record(stub, folder, name, **variant)
    out["miss"] = replay_missing(out["base.json"], folder)
    # the model answered otherwise: the base recording with another final answer
    doc = json.loads(out["base.json"].read_text(encoding="utf-8"))
    answer = doc["interactions"][-1]["response"]["body"]["choices"][0]["message"]
    answer["content"] = "stub reply to: rainy in Lisbon"
    out["answer.json"] = folder / "answer.json"
    out["answer.json"].write_text(json.dumps(doc), encoding="utf-8")
    return out


def diff(runs: dict[str, Path], base: str, new: str, *args: str) -> tuple[int, str]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["diff", str(runs[base]), str(runs[new]), *args])
    return code, out.getvalue()


@pytest.mark.parametrize(
    ("base", "new"), [("base", "again"), ("base.json", "base"), ("base", "base.json")]
)
def test_equal_runs_exit_0(runs: dict[str, Path], base: str, new: str) -> None:
    code, text = diff(runs, base, new)
    assert code == 0, text
    assert "equal: the same 3 steps" in text


@pytest.mark.parametrize(
    ("new", "headline", "lines"),
    [
        (
            "extra_tool",
            "differ at step 3: extra tool call (tool log_visit)",
            ['+   3  tool log_visit {"city":"Lisbon"}'],
        ),
        (
            "argument",
            "differ at step 2: tool arguments changed (tool get_weather)",
            ['    BASE  {"city":"Lisbon"}', '    NEW   {"city":"Oslo"}'],
        ),
        (
            "answer.json",
            "differ at step 3: model answer changed (model gpt-4o-mini)",
            ['~   3  model gpt-4o-mini → "stub reply to: rainy in Lisbon"'],
        ),
        (
            "extra_turn",
            "differ at step 4: extra model call (model gpt-4o-mini)",
            ['+   4  model gpt-4o-mini [live] → "stub reply to: And tomorrow?"'],
        ),
        (
            "miss",
            "differ at step 4: replay miss",
            [
                "+   4  miss: replay miss: more model calls than the 2 recorded",
                "  messages       differs",
            ],
        ),
    ],
)
def test_each_kind_of_divergence(
    runs: dict[str, Path], new: str, headline: str, lines: list[str]
) -> None:
    base = "base.json" if new.endswith(".json") else "base"
    code, text = diff(runs, base, new)
    assert code == 1, text
    assert headline in text
    for line in lines:
        assert line in text, text


def test_first_divergence_and_what_followed(runs: dict[str, Path]) -> None:
    result = diff_trajectories(load_trajectory(runs["base"]), load_trajectory(runs["argument"]))
    assert [row.op for row in result.rows] == ["equal", "changed", "changed"]
    assert [row.what for row in result.rows[1:]] == [
        "tool arguments changed",
        "prompt, answer changed",
    ]


def test_markdown_and_html_forms(runs: dict[str, Path], tmp_path: Path) -> None:
    code, md = diff(runs, "base", "miss", "--format", "md")
    assert code == 1
    assert md.startswith("### otel-replay diff: trajectories differ")
    assert "| + | 4 | replay miss | miss: replay miss: more model calls than the 2 recorded |" in md
    assert "<details><summary>why</summary>" in md
    page = tmp_path / "diff.html"
    code, _ = diff(runs, "base", "extra_tool", "-o", str(page))
    assert code == 1
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "extra tool call" in html


def test_bad_input_is_a_clear_error(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("not json\n", encoding="utf-8")
    assert main(["diff", str(runs["base"]), str(tmp_path / "absent.jsonl")]) == 2
    assert "absent.jsonl: no such file" in capsys.readouterr().err
    assert main(["diff", str(runs["base"]), str(garbage)]) == 2
    assert "garbage.jsonl" in capsys.readouterr().err


def test_tool_spans_without_arguments_take_those_the_model_asked_for(tmp_path: Path) -> None:
    """The example agent's ``execute_tool`` spans carry no arguments: its trajectory
    takes them from the answer that asked, so trace and cassette still compare equal."""
    import sys

    from report_runs import key_set

    import otel_replay

    sys.path.insert(0, str(Path(__file__).parent.parent / "examples" / "openai_agent"))
    try:
        import openai_weather_agent
    finally:
        sys.path.pop(0)
    cassette, traces = tmp_path / "c.json", tmp_path / "t.jsonl"
    with run_stub() as stub, key_set():
        with otel_replay.record(cassette, traces=traces, upstream_openai=stub.openai_url):
            openai_weather_agent.run("Lisbon")
    steps = load_trajectory(traces).steps
    assert [(s.kind, s.name) for s in steps] == [
        ("model", "gpt-4o-mini"),
        ("tool", "get_weather"),
        ("model", "gpt-4o-mini"),
    ]
    assert json.loads(steps[1].fact("arguments") or "") == {
        "city": "What is the weather in Lisbon?"
    }
    assert diff_trajectories(load_trajectory(cassette), load_trajectory(traces)).equal
