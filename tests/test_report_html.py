"""The HTML report in a real browser: a tool-calling agent on the official openai SDK,
recorded through the gateway against the stub upstream with its own spans, then replayed
strictly with one more turn (a miss); the report is opened in Debian's headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_runs import record, replay_missing

from otel_replay.frontends.cli import main
from otel_replay.testing.browser import browser_page

ROWS = "[...document.querySelectorAll('#rows .row')]"


@pytest.fixture
def report(tmp_path: Path, stub_thread) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    cassette, _ = record(stub_thread, tmp_path, "base")
    run_html = tmp_path / "run.html"
    traces = replay_missing(cassette, tmp_path, report=run_html)
    page = tmp_path / "report.html"
    assert main(["report", str(traces), "-o", str(page)]) == 0
    return page, run_html


async def test_report_in_headless_chromium(report: tuple[Path, Path], tmp_path: Path) -> None:
    page_file, run_html = report
    async with browser_page() as page:
        await page.open(page_file.as_uri())
        assert await page.eval("document.body.dataset.ready") == "5"
        rows = await page.eval(
            f"{ROWS}.map(r => [r.getAttribute('aria-level'), r.querySelector('.label').innerText,"
            " (r.querySelector('.badge') || {}).innerText || ''])"
        )
        # the agent's spans with the gateway's spans in place under the span that made them
        assert rows == [
            ["1", "invoke_agent weather", "agent"],
            ["2", "chat gpt-4o-mini", "replayed"],
            ["2", "execute_tool get_weather", "tool"],
            ["2", "chat gpt-4o-mini", "replayed"],
            ["2", "replay miss", "miss"],
        ]
        # the miss is at the agent span that issued it, selected on load, with its why
        assert await page.eval(f"{ROWS}[0].classList.contains('has-miss')")
        detail = await page.eval("document.getElementById('detail').innerText")
        assert "more model calls than the 2 recorded" in detail
        assert "nearest recordings" in detail
        await page.screenshot(tmp_path / "report-miss.png")

        # expanding a model call shows its request
        await page.eval(f"{ROWS}[1].click()")
        request = await page.eval("document.querySelector('#detail .request pre').innerText")
        assert json.loads(request)["model"] == "gpt-4o-mini"
        assert "Lisbon" in request
        # the keyboard moves the selection; collapse hides the children
        await page.key("ArrowDown", keycode=40)
        assert "execute_tool" in await page.eval("document.querySelector('#detail h2').innerText")
        await page.key("Home", keycode=36)
        await page.key("ArrowLeft", keycode=37)
        assert await page.eval(f"{ROWS}.length") == 1
        await page.key("ArrowRight", keycode=39)
        assert await page.eval(f"{ROWS}.length") == 5
        # search keeps the matches and their ancestors
        await page.eval(
            "const s = document.getElementById('search'); s.value = 'get_weather';"
            "s.dispatchEvent(new Event('input')); new Promise(r => setTimeout(r, 300))"
        )
        assert "match" in await page.eval("document.getElementById('count').innerText")
        await page.screenshot(tmp_path / "report.png")
        assert page.errors == []
        assert page.requests == [page_file.as_uri()]  # nothing but the file itself
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # replay --report FILE.html wrote the same kind of page for the run
    html = run_html.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "more model calls than the 2 recorded" in html


def _many_spans(path: Path, runs: int) -> int:
    """``runs`` agent runs of ten spans each (an agent span over nine tool spans)."""
    spans = []
    for run in range(runs):
        root = f"{run * 10 + 1:016x}"
        spans.append({"spanId": root, "name": f"invoke_agent run-{run}"})
        for step in range(9):
            spans.append(
                {
                    "spanId": f"{run * 10 + step + 2:016x}",
                    "parentSpanId": root,
                    "name": f"execute_tool step-{run}-{step}",
                }
            )
    for i, span in enumerate(spans):
        span.update(traceId="0af7651916cd43dd8448eb211c80319c")
        span.update(startTimeUnixNano=str(1_000 + i * 10), endTimeUnixNano=str(1_005 + i * 10))
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    path.write_text(json.dumps(doc) + "\n", encoding="utf-8")
    return len(spans)


async def test_a_large_run_renders_only_the_rows_in_view(tmp_path: Path) -> None:
    traces, page_file = tmp_path / "large.jsonl", tmp_path / "large.html"
    total = _many_spans(traces, 210)
    assert main(["report", str(traces), "-o", str(page_file)]) == 0
    async with browser_page() as page:
        await page.open(page_file.as_uri())
        assert await page.eval("document.body.dataset.ready") == str(total)
        # above 2,000 spans the first two levels are open: every span is a row to scroll
        assert await page.eval("document.getElementById('rows').style.height") == "46200px"
        assert await page.eval(f"{ROWS}.length") < 100  # only the rows in view are built
        await page.eval(f"{ROWS}[0].click()")
        await page.key("End", keycode=35)
        last = await page.eval("document.querySelector('#detail h2').innerText")
        assert last.startswith("execute_tool step-209-8")
        await page.eval(
            "const s = document.getElementById('search'); s.value = 'step-123-4';"
            "s.dispatchEvent(new Event('input')); new Promise(r => setTimeout(r, 300))"
        )
        labels = await page.eval(f"{ROWS}.map(r => r.querySelector('.label').innerText)")
        assert labels == ["invoke_agent run-123", "execute_tool step-123-4"]
        assert page.errors == []
