"""Report formats chosen by extension (``replay --report``, the pytest plugin's
``--otel-replay-report``), ``otel-replay report`` errors, and the price of live calls."""

from __future__ import annotations

import gc
import json
import textwrap
from pathlib import Path

import pytest
import trajectory_agent
from report_runs import KEY, key_set, record, replay_missing

import otel_replay
from otel_replay.core.exchange import CanonicalRequest, Exchange, Response
from otel_replay.frontends.cli import main
from otel_replay.reports.prices import cost_of, money, price_date, price_of
from otel_replay.testing.stub import run_stub

pytest_plugins = ["pytester"]


def test_run_report_in_markdown_and_json(tmp_path: Path, stub_thread) -> None:  # type: ignore[no-untyped-def]
    cassette, _ = record(stub_thread, tmp_path, "base")
    md = tmp_path / "run.md"
    replay_missing(cassette, tmp_path, report=md)
    text = md.read_text(encoding="utf-8")
    assert text.startswith("### otel-replay run")
    assert "- **replay miss: more model calls than the 2 recorded**" in text
    assert '| 2 | tool get_weather {"city":"Lisbon"} |' in text
    assert "| 4 | miss: replay miss: more model calls than the 2 recorded |" in text
    report = tmp_path / "run.json"
    replay_missing(cassette, tmp_path, report=report)
    assert report.read_text(encoding="utf-8").lstrip().startswith("{")


def test_recording_prices_its_live_calls(tmp_path: Path, stub_thread) -> None:  # type: ignore[no-untyped-def]
    with (
        key_set(),
        otel_replay.record(tmp_path / "c.json", upstream_openai=stub_thread.openai_url) as run,
    ):
        trajectory_agent.run()
    summary = run.summary
    assert summary is not None and summary.live == 2
    assert summary.live_cost is not None and summary.live_cost > 0
    assert summary.line().endswith(f"· live calls cost {money(summary.live_cost)}")
    assert money(0.0000123) == "$0.000012" and money(1.5) == "$1.5000"


def test_price_table() -> None:
    assert price_date() >= "2025-01-01"
    assert price_of("gpt-4o-2024-08-06") == price_of("gpt-4o")
    assert price_of("gpt-4o-mini") != price_of("gpt-4o")
    assert price_of("claude-sonnet-4-5-20250929") == price_of("claude-sonnet-4-5")
    assert price_of("my-finetune") is None and price_of(None) is None
    body = {"choices": [], "usage": {"prompt_tokens": 1_000_000, "completion_tokens": 0}}
    ex = Exchange(
        provider="openai",
        operation="chat",
        request=CanonicalRequest(endpoint="/v1/chat/completions", model="gpt-4o"),
        response=Response(status=200, body=body),
    )
    assert cost_of(ex) == pytest.approx(2.5)
    unknown = Exchange("openai", "chat", CanonicalRequest("/v1/chat/completions", "x"), ex.response)
    assert cost_of(unknown) is None


def test_report_command_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert main(["report", str(empty), "-o", str(tmp_path / "r.html")]) == 1
    assert "no span in" in capsys.readouterr().err
    assert main(["report", str(empty), "-o", str(tmp_path / "r.pdf")]) == 2
    assert "a report is .html or .md" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_pytest_plugin_reports_by_extension(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        test_agent=textwrap.dedent(
            """
            import openai

            def test_weather(otel_replay):
                with otel_replay("weather"), openai.OpenAI(max_retries=0) as client:
                    client.chat.completions.create(
                        model="gpt-4o-mini", messages=[{"role": "user", "content": "Oslo"}]
                    )
            """
        )
    )
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with run_stub() as stub:
        upstream = f"--otel-replay-upstream-openai={stub.openai_url}"
        md = pytester.path / "session.md"
        recorded = pytester.runpytest_inprocess(
            "-p",
            "no:hypothesispytest",
            "--otel-replay=record",
            upstream,
            f"--otel-replay-report={md}",
        )
    recorded.assert_outcomes(passed=1)
    text = md.read_text(encoding="utf-8")
    assert text.startswith("### otel-replay test session")
    assert "| test_agent.py::test_weather | " in text and "live calls cost $" in text
    monkeypatch.delenv("OPENAI_API_KEY")
    test_file = pytester.path / "test_agent.py"
    test_file.write_text(test_file.read_text().replace('"Oslo"', '"Rome"'), encoding="utf-8")
    html = pytester.path / "session.html"
    failed = pytester.runpytest_inprocess(
        "-p", "no:hypothesispytest", "--otel-replay=strict", f"--otel-replay-report={html}"
    )
    failed.assert_outcomes(failed=1)
    page = html.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert '<tr class="failed"><td>test_agent.py::test_weather</td>' in page
    assert "replay miss: messages changed" in page
    # the failing test's diff against its recording
    assert "diff against the recording" in page
    assert "differ at step 1: replay miss" in page


def test_report_and_diff_redact_a_foreign_trace(tmp_path: Path) -> None:
    """A trace file from elsewhere may hold a secret the trace store would have replaced:
    neither the report nor the diff writes it."""
    from secrets_corpus import FAKE_OPENAI_KEY

    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "name": "execute_tool fetch",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": FAKE_OPENAI_KEY}},
        ],
    }
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    traces = tmp_path / "foreign.jsonl"
    traces.write_text(json.dumps(doc) + "\n", encoding="utf-8")
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(doc).replace(FAKE_OPENAI_KEY, "{}") + "\n", encoding="utf-8")
    page, md = tmp_path / "r.html", tmp_path / "d.md"
    assert main(["report", str(traces), "-o", str(page)]) == 0
    assert main(["diff", str(traces), str(other), "-o", str(md)]) == 1
    assert "tool arguments changed" in md.read_text(encoding="utf-8")
    for path in (page, md):
        text = path.read_text(encoding="utf-8")
        assert FAKE_OPENAI_KEY not in text
    assert "[REDACTED:openai-key]" in page.read_text(encoding="utf-8")


def test_page_data_cannot_end_its_script_and_cycles_are_listed(tmp_path: Path) -> None:
    """Span text holding ``</script>`` stays data; spans whose parents name each other
    are both listed, once."""
    from otel_replay.reports.page import run_page
    from otel_replay.reports.spantree import load_spans

    def span(span_id: str, parent: str, name: str) -> dict[str, object]:
        return {
            "traceId": "0af7651916cd43dd8448eb211c80319c",
            "spanId": span_id,
            "parentSpanId": parent,
            "name": name,
            "startTimeUnixNano": "1",
            "endTimeUnixNano": "2",
        }

    hostile = "</script><script>alert(1)</script>"
    doc = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            span("b7ad6b7169203331", "b7ad6b7169203332", hostile),
                            span("b7ad6b7169203332", "b7ad6b7169203331", "other"),
                        ]
                    }
                ]
            }
        ]
    }
    traces = tmp_path / "cycle.jsonl"
    traces.write_text(json.dumps(doc) + "\n", encoding="utf-8")
    page = run_page(load_spans([traces]))
    assert page.count("<script") == 2 and page.count("</script>") == 2
    data = page.split('id="data">', 1)[1].split("</script>", 1)[0]
    spans = json.loads(data)["spans"]
    assert sorted(s["n"] for s in spans) == sorted([hostile, "other"])


def _many_spans(path: Path, count: int) -> Path:
    """A trace file of ``count`` recorded chat calls, one span each."""
    from otel_replay.spans.encode import exchange_to_trace_json

    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            ex = Exchange(
                provider="openai",
                operation="chat",
                request=CanonicalRequest(endpoint="/v1/chat/completions", model="gpt-4o"),
                response=Response(status=200, body={"choices": [], "n": i}),
                raw_request={"model": "gpt-4o", "messages": [{"role": "user", "content": f"{i}"}]},
                trace_id=f"{i + 1:032x}",
                span_id=f"{i + 1:016x}",
                start_ns=1_700_000_000_000_000_000 + i * 1000,
                end_ns=1_700_000_000_000_000_000 + i * 1000 + 500,
            )
            out.write(json.dumps(exchange_to_trace_json(ex)) + "\n")
    return path


@pytest.mark.parametrize("made_by", ["report command", "run report"])
def test_a_large_report_is_built_without_garbage_collections(tmp_path: Path, made_by: str) -> None:
    """The spans read and the page built hold no garbage cycles, and full collections
    during the build walk everything read so far (the 10,000-span report took up to 1.9x
    the 100-span one per span): the collector is paused while a report is built, and on
    again after (where it catches up at once)."""
    from otel_replay.frontends.reportcmd import report_command
    from otel_replay.reports.formats import write_run_report
    from otel_replay.reports.run import Summary

    traces = _many_spans(tmp_path / "t.jsonl", 2000)
    page = tmp_path / "r.html"
    assert report_command([_many_spans(tmp_path / "small.jsonl", 2)], page) == 0  # imports
    collections: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.collect()
    gc.callbacks.append(seen)
    try:
        if made_by == "report command":
            assert report_command([traces], page) == 0
        else:
            write_run_report(page, Summary(mode="record"), [], traces)
    finally:
        gc.callbacks.remove(seen)
    # one collection at most: the one set off by the first allocations once it is on again
    assert len(collections) <= 1, f"the collector ran while the report was built: {collections}"
    assert gc.isenabled()
    assert page.read_text(encoding="utf-8").count("gpt-4o") >= 1
