"""A small tool-calling agent on the official SDKs, and real third-party instrumentation.

``run_openai_agent(base_url)`` / ``run_anthropic_agent(base_url)`` run one agent turn (the
model calls a tool, the agent answers it, the model replies) and return what the agent saw.
``traced(path, instrumentors)`` turns instrumentors on around a block with an in-process
TracerProvider (and LoggerProvider) whose exporters append OTLP JSON lines to files, the
way the Collector's file exporter does (or, with ``otlp=URL``, export over OTLP/HTTP to
that endpoint: a gateway's own receiver), and turns everything off again afterwards:
instrumentors patch the SDKs globally.
"""

from __future__ import annotations

import importlib
import json
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import openai
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    LogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from otel_replay.otlp.codec import json_line

SYSTEM = "You are a weather assistant. Use the tool."
QUESTION = "What is the weather in Paris?"
TOOL_RESULT = "sunny, 21 C"
OPENAI_MODEL = "gpt-4o-mini"
ANTHROPIC_MODEL = "claude-haiku-4-5"
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": WEATHER_SCHEMA,
        },
    }
]
ANTHROPIC_TOOLS = [
    {
        "name": "get_weather",
        "description": "Current weather for a city",
        "input_schema": WEATHER_SCHEMA,
    }
]
FINAL_TEXT = f"stub reply to: {TOOL_RESULT}"
"""What the stub upstream answers once the tool result is in the conversation."""


@dataclass
class AgentResult:
    """What the agent saw: the tool calls the model made (id, name, parsed arguments)
    and the final text."""

    tool_calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    final_text: str = ""


def run_openai_agent(
    base_url: str, *, stream: bool = False, api_key: str = "sk-test"
) -> AgentResult:
    """One tool-calling turn with the ``openai`` SDK's Chat Completions API."""
    client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
    ]
    result = AgentResult()
    try:
        first = openai_turn(client, messages, stream)
        calls = first["tool_calls"]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        for call in calls:
            args = json.loads(call["function"]["arguments"])
            result.tool_calls.append((call["id"], call["function"]["name"], args))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": TOOL_RESULT})
        result.final_text = openai_turn(client, messages, stream)["content"]
    finally:
        client.close()
    return result


def openai_turn(client: openai.OpenAI, messages: list[Any], stream: bool) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": OPENAI_MODEL,
        "messages": messages,
        "tools": OPENAI_TOOLS,
        "temperature": 0.2,
    }
    if not stream:
        message = client.chat.completions.create(**kwargs).choices[0].message
        calls = [c.model_dump(include={"id", "type", "function"}) for c in message.tool_calls or []]
        return {"content": message.content, "tool_calls": calls}
    text: list[str] = []
    calls_by_index: dict[int, dict[str, Any]] = {}
    chunks = client.chat.completions.create(
        **kwargs, stream=True, stream_options={"include_usage": True}
    )
    for chunk in chunks:
        for choice in chunk.choices:
            delta = choice.delta
            text.append(delta.content or "")
            for tc in delta.tool_calls or []:
                slot = calls_by_index.setdefault(
                    tc.index,
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                slot["id"] = tc.id or slot["id"]
                if tc.function is not None:
                    slot["function"]["name"] += tc.function.name or ""
                    slot["function"]["arguments"] += tc.function.arguments or ""
    return {
        "content": "".join(text),
        "tool_calls": [calls_by_index[i] for i in sorted(calls_by_index)],
    }


def run_anthropic_agent(
    base_url: str,
    *,
    stream: bool = False,
    api_key: str = "sk-ant-test",
    tracer_provider: TracerProvider | None = None,
) -> AgentResult:
    """One tool-calling turn with the ``anthropic`` SDK's Messages API; with
    ``tracer_provider``, traced by the SDK itself, content included."""
    client = anthropic.Anthropic(base_url=base_url, api_key=api_key, max_retries=0)
    if tracer_provider is not None:
        tracing = {"tracer_provider": tracer_provider, "traces": {"content_mode": "content"}}
        client = client.with_options(open_telemetry=tracing)
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    result = AgentResult()
    try:
        first = _anthropic_turn(client, messages, stream)
        messages.append({"role": "assistant", "content": first})
        results = []
        for block in first:
            if block["type"] == "tool_use":
                result.tool_calls.append((block["id"], block["name"], block["input"]))
                results.append(
                    {"type": "tool_result", "tool_use_id": block["id"], "content": TOOL_RESULT}
                )
        messages.append({"role": "user", "content": results})
        final = _anthropic_turn(client, messages, stream)
        result.final_text = "".join(b.get("text", "") for b in final if b["type"] == "text")
    finally:
        client.close()
    return result


def _anthropic_turn(
    client: anthropic.Anthropic, messages: list[Any], stream: bool
) -> list[dict[str, Any]]:
    kwargs: dict[str, Any] = {
        "model": ANTHROPIC_MODEL,
        "max_tokens": 256,
        "system": SYSTEM,
        "messages": messages,
        "tools": ANTHROPIC_TOOLS,
    }
    if not stream:
        message = client.messages.create(**kwargs)
    else:
        with client.messages.stream(**kwargs) as events:
            message = events.get_final_message()
    return [block.model_dump(exclude_none=True) for block in message.content]


class JsonLinesSpanExporter(SpanExporter):
    """Appends one ``ExportTraceServiceRequest`` per batch as an OTLP JSON line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        _append(self.path, json_line(encode_spans(spans)), self._lock)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


class JsonLinesLogExporter(LogRecordExporter):
    """Appends one ``ExportLogsServiceRequest`` per batch as an OTLP JSON line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def export(self, batch: Sequence[Any]) -> LogRecordExportResult:
        _append(self.path, json_line(encode_logs(batch)), self._lock)
        return LogRecordExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def _append(path: Path, line: str | bytes, lock: threading.Lock) -> None:
    data = line.encode() if isinstance(line, str) else line
    if not data.endswith(b"\n"):
        data += b"\n"
    with lock, path.open("ab") as handle:
        handle.write(data)


@dataclass
class Traced:
    traces: Path
    logs: Path
    tracer_provider: TracerProvider
    logger_provider: LoggerProvider


@contextmanager
def traced(
    directory: Path,
    instrumentors: Sequence[Callable[[], Any]],
    *,
    service: str = "weather-agent",
    otlp: str | None = None,
) -> Iterator[Traced]:
    """Instrument the SDKs around a block; spans go to ``directory/traces.jsonl`` and log
    records (events) to ``directory/logs.jsonl`` — or, with ``otlp`` (an OTLP/HTTP base
    URL such as a gateway's ``OTEL_EXPORTER_OTLP_ENDPOINT``), to its ``/v1/traces`` and
    ``/v1/logs``, each as it ends. Each entry of ``instrumentors`` is a zero-argument
    factory of a BaseInstrumentor."""
    resource = Resource.create({"service.name": service})
    tracer_provider = TracerProvider(resource=resource)
    logger_provider = LoggerProvider(resource=resource)
    out = Traced(
        directory / "traces.jsonl", directory / "logs.jsonl", tracer_provider, logger_provider
    )
    spans, logs = _exporters(out, otlp)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    active = []
    try:
        for factory in instrumentors:
            instrumentor = factory()
            with warnings.catch_warnings():  # their import-time deprecations are not ours
                warnings.simplefilter("ignore", DeprecationWarning)
                instrumentor.instrument(
                    tracer_provider=tracer_provider,
                    logger_provider=logger_provider,
                    skip_dep_check=True,
                )
            active.append(instrumentor)
        yield out
    finally:
        for instrumentor in reversed(active):
            _uninstrument(instrumentor)
        tracer_provider.shutdown()
        logger_provider.shutdown()


def _exporters(out: Traced, otlp: str | None) -> tuple[SpanExporter, LogRecordExporter]:
    """Exporters to ``out``'s files, or over OTLP/HTTP to ``otlp``."""
    if otlp is None:
        return JsonLinesSpanExporter(out.traces), JsonLinesLogExporter(out.logs)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    base = otlp.rstrip("/")
    return (
        OTLPSpanExporter(endpoint=f"{base}/v1/traces", timeout=30),
        OTLPLogExporter(endpoint=f"{base}/v1/logs", timeout=30),
    )


_WRAPPED = ("openai.", "anthropic.", "langchain_core.", "langchain_openai.")
"""The packages whose classes an instrumentation may leave wrapped."""


def _uninstrument(instrumentor: Any) -> None:
    """``uninstrument()``, then whatever it left wrapped: some instrumentations unwrap by
    dotted paths that no longer name the SDK's classes (OpenLLMetry's OpenAI one, on the
    SDK's package layout, and its LangChain one ``BaseCallbackManager.__init__``), so the
    SDK stayed wrapped and every later test's calls made spans, and traceparents, of this
    block's shut-down provider (or, instrumented again, none: the old wrapper's handler
    stands in for the new one's)."""
    instrumentor.uninstrument()
    package = type(instrumentor).__module__
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(_WRAPPED):
            continue
        for cls in [v for v in vars(module).values() if isinstance(v, type)]:
            for attr, value in list(vars(cls).items()):
                wrapper = getattr(value, "_self_wrapper", None)
                owner = getattr(wrapper, "__module__", None) or ""
                if owner == package or owner.startswith(package + "."):
                    setattr(cls, attr, value.__wrapped__)


_INSTRUMENTORS = {
    "openinference-openai": ("openinference.instrumentation.openai", "OpenAIInstrumentor"),
    "openllmetry-openai": ("opentelemetry.instrumentation.openai", "OpenAIInstrumentor"),
    "openllmetry-anthropic": ("opentelemetry.instrumentation.anthropic", "AnthropicInstrumentor"),
    "otel-openai-v2": ("opentelemetry.instrumentation.openai_v2", "OpenAIInstrumentor"),
}


def instrumentor(name: str) -> Callable[[], Any]:
    """A factory for one of the installed instrumentations, imported with their own
    import-time deprecation warnings silenced (they are not ours to fix)."""
    module_name, class_name = _INSTRUMENTORS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = importlib.import_module(module_name)
    cls = getattr(module, class_name)

    def make() -> Any:
        return cls()

    return make
