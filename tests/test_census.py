"""The census ``build`` and ``doctor`` print: counts per source, reasons with their fix,
components not compared; a reader's own skip reasons fit in as data."""

from __future__ import annotations

from otel_replay.core.exchange import CanonicalRequest, Exchange, Response
from otel_replay.readers.census import NO_CALLS_FIX, Census, Problem, Source
from otel_replay.readers.registry import Fidelity


def exchange(known: set[str], views: set[str] = set()) -> Exchange:  # noqa: B006
    request = CanonicalRequest("/v1/messages", "m", known=frozenset(known), views=frozenset(views))
    return Exchange("anthropic", "messages", request, Response(200))


def test_counts_reasons_and_what_was_not_compared():
    census = Census()
    logs, spans = Source("com.anthropic.claude_code", "2.1.0"), Source("pydantic-ai", "2.68.0")
    census.read(logs, Fidelity.BODY, exchange({"endpoint", "model"}))
    skipped = Problem("request body not logged", "set OTEL_LOG_RAW_API_BODIES=1")
    census.skipped(logs, skipped)
    census.skipped(logs, skipped)
    partial = exchange({"endpoint", "model", "system", "messages"}, {"tool-results"})
    census.read(spans, Fidelity.MESSAGES, partial)
    assert (census.calls, census.replayable) == (4, 2)
    assert census.lines() == [
        "com.anthropic.claude_code 2.1.0: 3 model calls · 1 exactly · 0 semantically"
        " · 2 not replayable",
        "  2 × request body not logged — set OTEL_LOG_RAW_API_BODIES=1",
        "pydantic-ai 2.68.0: 1 model call · 0 exactly · 1 semantically · 0 not replayable",
        "  not recorded, so not compared on replay: params (1), tools (1)",
        "  compared only in what the trace's form expresses: tool-results (1)",
    ]
    doc = census.to_json()
    assert doc["sources"][0]["problems"] == [
        {"reason": skipped.reason, "fix": skipped.fix, "calls": 2}
    ]


def test_params_a_source_records_in_part_are_compared_by_name():
    census = Census()
    source = Source("openinference.instrumentation.llama_index", "4.6.1")
    for params in ({"temperature": 0.2}, {"temperature": 0.2, "max_tokens": 9}, {}):
        request = CanonicalRequest(
            "/v1/chat/completions", "m", params=params, known=frozenset({"endpoint", "model"})
        )
        census.read(source, Fidelity.MESSAGES, Exchange("openai", "chat", request, Response(200)))
    assert census.lines()[1:] == [
        "  not recorded, so not compared on replay: messages (3), params (1), system (3),"
        " tools (3)",
        "  params compared by name, only those the trace recorded: max_tokens (1),"
        " temperature (2); others not compared",
    ]
    (tally,) = census.to_json()["sources"]
    assert tally["params_compared_by_name"] == {"max_tokens": 1, "temperature": 2}


def test_no_model_calls_says_so():
    assert Census().lines() == ["no model calls found", f"  {NO_CALLS_FIX}"]


def test_no_model_calls_names_the_spans_seen():
    census = Census()
    census.other(Source("codex_otel", "0.46.0"))
    census.other(Source("codex_otel", "0.46.0"))
    lines = census.lines()
    assert lines[0] == "no model calls found among 2 spans: codex_otel 0.46.0 (2)"
