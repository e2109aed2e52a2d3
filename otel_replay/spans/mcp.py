"""An MCP exchange as a span, by the MCP semantic conventions.

Name ``{mcp.method.name} {target}`` (``tools/call get_forecast``), kind CLIENT; attributes
``mcp.method.name``, ``jsonrpc.request.id``, ``jsonrpc.protocol.version``,
``mcp.protocol.version``, ``network.transport``, and per method ``gen_ai.tool.name`` with
``gen_ai.operation.name`` ``execute_tool`` (a tool call: a report's and a diff's
trajectory shows it as one), ``gen_ai.prompt.name`` or ``mcp.resource.uri``; a tool
call's arguments and result as ``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result``
(redacted like any body, before they get here); ``error.type`` and ``rpc.response.status_code``
for a JSON-RPC error. The project's own attributes under ``otel_replay.mcp.`` keep the
server, the exact request and answer, and whether it was replayed. It carries no
``otel_replay.format_version``: ``build`` reads no model call from it.
"""

from __future__ import annotations

import json
import time
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otel_replay.core import genai
from otel_replay.core.exchange import JSON, Exchange
from otel_replay.core.ids import new_span_id, new_trace_id
from otel_replay.providers.mcp import (
    ANY_SERVER,
    EXECUTE_TOOL,
    JSONRPC_ID,
    JSONRPC_VERSION,
    MCP_METHOD,
    MCP_PROTOCOL_VERSION,
    MCP_REQUEST,
    MCP_RESOURCE_URI,
    MCP_RESPONSE,
    MCP_SERVER,
    NETWORK_TRANSPORT,
    PROMPT_NAME,
    RPC_STATUS,
    TOOL_ARGUMENTS,
    TOOL_NAME,
    TOOL_RESULT,
    answer_message,
    server_of,
    target,
)
from otel_replay.spans import attributes as own
from otel_replay.spans.encode import JsonAttrs, _export_json, nanos

__all__ = ["tool_span_json"]


def _text(value: JSON) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def tool_span_json(
    exchange: Exchange,
    *,
    request_id: JSON = None,
    protocol: str | None = None,
    transport: str = "tcp",
    replayed: bool = False,
    service_name: str = "otel-replay",
) -> dict[str, Any]:
    """The OTLP JSON document of one MCP exchange's span (its bodies already redacted);
    ``request_id``: the JSON-RPC id the client used, ``protocol``: the MCP revision it
    spoke, ``transport``: ``tcp`` (Streamable HTTP) or ``pipe`` (stdio)."""
    request = exchange.request
    method = str(request.params.get("method", exchange.operation))
    message = dict(request.params)
    message.pop("method", None)
    aim = target({"method": method, "params": message})
    attrs = JsonAttrs()
    attrs.text(MCP_METHOD, method)
    attrs.text(JSONRPC_VERSION, "2.0")
    if request_id is not None:
        attrs.text(JSONRPC_ID, str(request_id))
    if protocol:
        attrs.text(MCP_PROTOCOL_VERSION, protocol)
    in_process = server_of(request.endpoint) == ANY_SERVER  # the agent's own tool
    if not in_process:
        attrs.text(NETWORK_TRANSPORT, transport)
    answer = answer_message(exchange.response)
    if method == "tools/call" and aim is not None:
        attrs.text(genai.OPERATION_NAME, EXECUTE_TOOL)
        attrs.text(TOOL_NAME, aim)
        attrs.text(TOOL_ARGUMENTS, _text(message.get("arguments", {})))
        if isinstance(answer, dict) and "result" in answer:
            attrs.text(TOOL_RESULT, _text(answer["result"]))
    elif method == "prompts/get" and aim is not None:
        attrs.text(PROMPT_NAME, aim)
    elif method == "resources/read" and aim is not None:
        attrs.text(MCP_RESOURCE_URI, aim)
    attrs.text(MCP_SERVER, server_of(request.endpoint))
    attrs.text(MCP_REQUEST, _text(request.params))
    if answer is not None:
        attrs.text(MCP_RESPONSE, _text(answer))
    if replayed:
        attrs.flag(own.REPLAYED, True)
    error = answer.get("error") if isinstance(answer, dict) else None
    status: dict[str, Any] = {}
    if isinstance(error, dict):
        code = error.get("code")
        attrs.text(genai.ERROR_TYPE, str(code) if code is not None else "error")
        if isinstance(code, int):
            attrs.integer(RPC_STATUS, code)
        status = {"message": str(error.get("message", "")), "code": Status.STATUS_CODE_ERROR}
    start_ns = exchange.start_ns or time.time_ns()
    span: dict[str, Any] = {
        "traceId": exchange.trace_id or new_trace_id(),
        "spanId": exchange.span_id or new_span_id(),
        "name": _span_name(method, aim, in_process),
        "kind": Span.SPAN_KIND_INTERNAL if in_process else Span.SPAN_KIND_CLIENT,
        "startTimeUnixNano": nanos(start_ns),
        "endTimeUnixNano": nanos(max(start_ns, exchange.end_ns)),
        "attributes": attrs.items,
    }
    if status:
        span["status"] = status
    if exchange.parent_span_id:
        span["parentSpanId"] = exchange.parent_span_id
    return _export_json(span, service_name)


def _span_name(method: str, aim: str | None, in_process: bool) -> str:
    """``tools/call get_weather`` for an MCP call; ``execute_tool get_weather`` for a call
    of the agent's own tool, as the GenAI conventions name a tool's execution."""
    if in_process and aim:
        return f"{EXECUTE_TOOL} {aim}"
    return f"{method} {aim}" if aim else method
