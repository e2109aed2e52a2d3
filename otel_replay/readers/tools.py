"""Tool executions in traces, read back as tool calls (MCP exchanges, provider ``mcp``).

Like the model-call readers, each projection keys on the attributes a span carries:

- the gateway's own tool-call spans (``otel_replay.mcp.server`` / ``.request`` /
  ``.response``, ``spans.mcp``): the exact request and answer, any MCP method;
- GenAI ``execute_tool`` spans with ``gen_ai.tool.call.arguments`` and
  ``gen_ai.tool.call.result``;
- OpenInference ``TOOL`` spans (``tool.name``, ``input.value``, ``output.value``);
- the MCP SDK's own spans (``mcp.method.name`` and an id only): seen, without content.

A tool call read from another instrumentation's span names no MCP server: it is kept
under the endpoint ``/mcp/`` (``providers.mcp.ANY_SERVER``) and answers that tool's call
on whichever server the agent reaches it. Its answer is the tool's result as a
``tools/call`` result (a text block, unless the trace kept the result's own form). What
each source captured is counted in the census (``doctor``), with the setting that turns
tool content on where it was off.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.core import genai
from otel_replay.core.exchange import JSON, Exchange, Response
from otel_replay.providers import mcp as wire
from otel_replay.readers.view import span_place

__all__ = ["ToolRead", "read_tool"]

OI_TOOL_KIND = "TOOL"
OI_TOOL_NAME = "tool.name"
OI_INPUT = "input.value"
OI_OUTPUT = "output.value"

FIX_GENAI = (
    "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: tool arguments and results "
    "are recorded only with message content"
)
FIX_OPENINFERENCE = "unset OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS"
FIX_MCP_SDK = (
    "the MCP SDK's spans carry no arguments or results: record the server through "
    "`otel-replay record --mcp NAME=URL`"
)


@dataclass(frozen=True, slots=True)
class ToolRead:
    """A tool execution a span shows: its tool call when the span kept arguments and
    result (``exchange``), else None and the setting that would keep them (``fix``)."""

    exchange: Exchange | None
    fix: str = ""


def _parsed(value: Any) -> JSON:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _own(span: Span, attrs: dict[str, Any]) -> ToolRead:
    params = _parsed(attrs[wire.MCP_REQUEST])
    answer = _parsed(attrs.get(wire.MCP_RESPONSE))
    if not isinstance(params, dict):
        return ToolRead(None, "the span's request is not JSON")
    rest = {key: value for key, value in params.items() if key != "method"}
    message = {"method": params.get("method"), "params": rest}
    exchange = Exchange(
        provider=wire.MCP,
        operation=str(params.get("method")),
        request=wire.canonical(str(attrs[wire.MCP_SERVER]), message),
        response=Response(status=200, headers={"content-type": "application/json"}, body=answer),
        source="otel-replay",
        **span_place(span),
    )
    return ToolRead(exchange)


def _call(span: Span, tool: str, arguments: Any, result: Any, source: str) -> ToolRead:
    args = _parsed(arguments)
    if not isinstance(args, dict):
        args = {} if args in (None, "") else {"input": args}
    outcome = _as_result(_parsed(result))
    message = {"method": "tools/call", "params": {"name": tool, "arguments": args}}
    answer = {"jsonrpc": "2.0", "id": 0, "result": outcome}
    exchange = Exchange(
        provider=wire.MCP,
        operation="tools/call",
        request=wire.canonical(wire.ANY_SERVER, message),
        response=Response(status=200, headers={"content-type": "application/json"}, body=answer),
        source=source,
        **span_place(span),
    )
    return ToolRead(exchange)


def _block(value: JSON) -> bool:
    return isinstance(value, dict) and isinstance(value.get("type"), str)


def _as_result(outcome: JSON) -> JSON:
    """A ``tools/call`` result from what a trace kept of it: the result itself, its
    content blocks (one, or a list: what agent frameworks record), else a text block."""
    if isinstance(outcome, dict) and isinstance(outcome.get("content"), list):
        return outcome
    if _block(outcome):
        return {"content": [outcome], "isError": False}
    if isinstance(outcome, list) and outcome and all(_block(item) for item in outcome):
        return {"content": outcome, "isError": False}
    text = outcome if isinstance(outcome, str) else json.dumps(outcome, ensure_ascii=False)
    return {"content": [{"type": "text", "text": text}], "isError": False}


def read_tool(span: Span, attrs: dict[str, Any]) -> ToolRead | None:
    """The tool execution ``span`` shows, or None when it shows none."""
    if wire.MCP_SERVER in attrs and wire.MCP_REQUEST in attrs:
        return _own(span, attrs)
    if attrs.get(genai.OPERATION_NAME) == wire.EXECUTE_TOOL:
        tool = attrs.get(wire.TOOL_NAME) or span.name.partition(" ")[2]
        arguments, result = attrs.get(wire.TOOL_ARGUMENTS), attrs.get(wire.TOOL_RESULT)
        if not tool or arguments is None or result is None:
            return ToolRead(None, FIX_GENAI)
        return _call(span, str(tool), arguments, result, "genai-semconv")
    if attrs.get(genai.OI_SPAN_KIND) == OI_TOOL_KIND:
        tool = attrs.get(OI_TOOL_NAME) or span.name
        arguments, result = attrs.get(OI_INPUT), attrs.get(OI_OUTPUT)
        if arguments is None or result is None:
            return ToolRead(None, FIX_OPENINFERENCE)
        return _call(span, str(tool), arguments, result, "openinference")
    if attrs.get(wire.MCP_METHOD) == "tools/call":
        return ToolRead(None, FIX_MCP_SDK)
    return None
