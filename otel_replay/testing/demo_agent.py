"""The demo's agent: a small tool-calling agent on the providers' plain HTTP APIs.

It uses only the standard library for model calls (so ``otel-replay demo`` needs no SDK)
and the OpenTelemetry SDK for its own telemetry, exported over OTLP to wherever
``OTEL_EXPORTER_OTLP_ENDPOINT`` points. Every run carries a fresh session UUID and the
current time in its prompt, the kind of volatile values replay must see through.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import urllib.error
import urllib.request
import uuid
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def _post(url: str, body: dict[str, Any], headers: dict[str, str]) -> bytes:
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **headers, **carrier},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return bytes(response.read())
    except urllib.error.HTTPError as exc:
        message = exc.read().decode("utf-8", "replace")
        raise SystemExit(f"model call failed ({exc.code}): {message}") from None


def get_weather(city: str) -> str:
    return f"sunny and 21°C in {city}"


def openai_turns(city: str, session: str, now: str) -> str:
    base = os.environ["OPENAI_BASE_URL"].rstrip("/")
    headers = {"authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}"}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": f"You are a travel helper. Session {session} at {now}."},
        {"role": "user", "content": city},
    ]
    tracer = trace.get_tracer("demo-agent")
    for _ in range(4):
        body = {"model": "gpt-4o-mini", "messages": messages, "tools": [WEATHER_TOOL]}
        reply = json.loads(_post(f"{base}/chat/completions", body, headers))
        message = reply["choices"][0]["message"]
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            return str(message.get("content"))
        for call in calls:
            with tracer.start_as_current_span("execute_tool get_weather"):
                args = json.loads(call["function"]["arguments"])
                result = get_weather(args["city"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return "gave up"


def anthropic_stream(question: str) -> str:
    base = os.environ["ANTHROPIC_BASE_URL"].rstrip("/")
    headers = {
        "x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""),
        "anthropic-version": "2023-06-01",
    }
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 200,
        "stream": True,
        "messages": [{"role": "user", "content": question}],
    }
    text = []
    for line in _post(f"{base}/v1/messages", body, headers).decode().splitlines():
        if line.startswith("data: "):
            event = json.loads(line[6:])
            if event.get("type") == "content_block_delta":
                text.append(event["delta"].get("text", ""))
    return "".join(text)


def main() -> int:
    provider = TracerProvider(resource=Resource.create({"service.name": "demo-agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    tracer = trace.get_tracer("demo-agent")
    city = os.environ.get("DEMO_CITY", "Lisbon")
    session = str(uuid.uuid4())
    now = dt.datetime.now(dt.UTC).isoformat()
    with tracer.start_as_current_span("invoke_agent travel-helper"):
        answer = openai_turns(city, session, now)
        summary = anthropic_stream(f"Summarise for a traveller: {answer}")
    provider.shutdown()
    print(f"answer: {answer}")
    print(f"summary: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
