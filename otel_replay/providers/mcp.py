"""The Model Context Protocol's wire: JSON-RPC 2.0 messages over Streamable HTTP or stdio.

MCP is one more protocol surface, like a provider's API. A client's request becomes an
:class:`~otel_replay.core.exchange.Exchange` with provider ``mcp``, its operation the
JSON-RPC method (``tools/call``, ``tools/list``, ``initialize``, ``server/discover``, ...),
and a canonical request holding what matching compares: the server (``endpoint``
``/mcp/NAME``), the method's target (the tool, prompt or resource, as ``model``), and the
method with its params (``params``), less what only carries the transport: ``_meta``
(progress tokens, trace context, the 2026 revision's client info) and the request id.
The answer is the server's JSON-RPC response, as a JSON body or as the SSE events that
carried it (notifications the server sent on the way included).

Pure functions over parsed messages; the gateway's mount (``gateway.mcp``) and the stdio
bridge (``frontends.mcp_stdio``) move the bytes.
"""

from __future__ import annotations

import dataclasses
import json
import re
from argparse import ArgumentTypeError
from typing import Any

from otel_replay.core import envvars as ev
from otel_replay.core.exchange import JSON, CanonicalRequest, Response, SSEEvent

__all__ = [
    "ANY_SERVER",
    "KEPT_HEADERS",
    "LISTENING",
    "MCP",
    "MOUNT",
    "REPEATABLE",
    "BadServer",
    "answer_with_id",
    "canonical",
    "env_name",
    "error_message",
    "initialize_request",
    "kind",
    "parse_server",
    "response_id",
    "server_of",
    "server_path",
    "speaks_2026",
    "target",
    "target_label",
    "with_result_type",
]

MCP = "mcp"
"""The provider name of an MCP exchange."""

MOUNT = "/mcp/"
"""Where the gateway serves MCP server NAME: ``/mcp/NAME``."""

ANY_SERVER = ""
"""The server of a tool call read from a trace that does not name one (endpoint ``/mcp/``):
it answers the tool's call on any server."""

REPEATABLE = frozenset(
    {
        "initialize",
        "server/discover",
        "ping",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "subscriptions/listen",
    }
)
"""Methods that describe the server rather than act: once their recordings are consumed,
the last one answers again (a client reconnecting asks anew)."""

LISTENING = frozenset({"subscriptions/listen"})
"""Requests answered by a stream that stays open (the 2026 revision's change events):
recorded once its first event has passed, replayed as the recorded events on a stream
left open until the client leaves."""

SUBSCRIPTION_META = "io.modelcontextprotocol/subscriptionId"
"""The ``_meta`` key of a listen stream's events naming the request (its id)."""

VOLATILE_PARAMS = frozenset({"initialize"})
"""Methods whose params say who the client is (name, version, capabilities), not what it
asks: matched by method alone."""

KEPT_HEADERS = ("content-type", "mcp-session-id", "mcp-protocol-version")
"""Response headers worth replaying (the session id's value is minted anew on replay)."""

HANDSHAKE_VERSION = "2025-11-25"
"""The protocol revision the gateway's own handshake asks for when the client named none."""

MODERN_VERSION = "2026-07-28"
"""The first revision of the stateless protocol (discovery instead of a handshake)."""

SESSION_HEADER = "mcp-session-id"
ISSUED = "issued"  # what a recording keeps of the session id the server issued

# The span attributes of a tool call (the MCP and GenAI semantic conventions), written by
# ``spans.mcp`` and read back by ``readers.tools``; the project's own under otel_replay.mcp.
MCP_METHOD = "mcp.method.name"
MCP_PROTOCOL_VERSION = "mcp.protocol.version"
MCP_RESOURCE_URI = "mcp.resource.uri"
JSONRPC_ID = "jsonrpc.request.id"
JSONRPC_VERSION = "jsonrpc.protocol.version"
RPC_STATUS = "rpc.response.status_code"
NETWORK_TRANSPORT = "network.transport"
TOOL_NAME = "gen_ai.tool.name"
PROMPT_NAME = "gen_ai.prompt.name"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
EXECUTE_TOOL = "execute_tool"
MCP_SERVER = "otel_replay.mcp.server"
MCP_REQUEST = "otel_replay.mcp.request"
MCP_RESPONSE = "otel_replay.mcp.response"

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_TARGETS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_TARGET_LABELS = {"tools/call": "tool", "prompts/get": "prompt", "resources/read": "resource"}


def server_path(name: str) -> str:
    """The gateway path of MCP server ``name``."""
    return MOUNT + name


def server_of(endpoint: str) -> str:
    """The server name of an MCP exchange's endpoint (``/mcp/NAME``)."""
    return endpoint.removeprefix(MOUNT)


def env_name(name: str) -> str:
    """``OTEL_REPLAY_MCP_<NAME>_URL``: NAME upper-cased, other characters ``_``."""
    return ev.OTEL_REPLAY_MCP_PREFIX + re.sub(r"[^A-Z0-9]", "_", name.upper()) + "_URL"


class BadServer(ArgumentTypeError, ValueError):
    """A ``--mcp`` value that is not ``NAME=URL`` (argparse shows the message as is)."""


def parse_server(text: str) -> tuple[str, str]:
    """``NAME=URL`` as given to ``--mcp``; :class:`BadServer` with a one-line reason."""
    name, sep, url = text.partition("=")
    name, url = name.strip(), url.strip()
    if not sep or not _NAME.fullmatch(name):
        raise BadServer(f"expected NAME=URL with NAME of letters, digits, '_', '.', '-': {text!r}")
    if not url.startswith(("http://", "https://")):
        raise BadServer(f"the MCP server {name}'s URL must be http(s)://...: {url!r}")
    return name, url


def kind(message: JSON) -> str:
    """``request`` (a method and an id), ``notification`` (a method, no id), ``response``
    (a result or error for an id the server sent) or ``invalid``."""
    if not isinstance(message, dict):
        return "invalid"
    if isinstance(message.get("method"), str):
        return "request" if "id" in message and message["id"] is not None else "notification"
    if "id" in message and ("result" in message or "error" in message):
        return "response"
    return "invalid"


def target(message: dict[str, Any]) -> str | None:
    """What a request acts on: the tool, prompt or resource it names, else None."""
    key = _TARGETS.get(message.get("method", ""))
    params = message.get("params")
    value = params.get(key) if key and isinstance(params, dict) else None
    return value if isinstance(value, str) else None


def target_label(method: str) -> str:
    """What the target of ``method`` is called in a miss (``tool``, ``prompt``, ...)."""
    return _TARGET_LABELS.get(method, "target")


def _stripped(params: JSON) -> JSON:
    if not isinstance(params, dict):
        return params
    return {key: value for key, value in params.items() if key != "_meta"}


def canonical(server: str, message: dict[str, Any]) -> CanonicalRequest:
    """What matching compares of a client's request to ``server``: the method and its
    params without ``_meta``, the target as ``model`` (see the module's docstring)."""
    method = str(message.get("method", ""))
    params: dict[str, JSON] = {"method": method}
    if method not in VOLATILE_PARAMS:
        stripped = _stripped(message.get("params"))
        if isinstance(stripped, dict):
            params.update((k, v) for k, v in stripped.items() if k != "method")
        elif stripped is not None:
            params["params"] = stripped
    return CanonicalRequest(
        endpoint=server_path(server),
        model=target(message),
        params=params,
        known=frozenset({"endpoint", "model", "params"}),
    )


def arguments(request: CanonicalRequest) -> JSON:
    """The params of a canonical MCP request other than the method and its target."""
    method = request.params.get("method")
    key = _TARGETS.get(str(method))
    return {k: v for k, v in request.params.items() if k not in ("method", key)}


def initialize_request(protocol: str) -> dict[str, Any]:
    """The gateway's own ``initialize``: a session with the real server for a live call
    made in a replayed session."""
    from otel_replay._version import __version__

    client = {"name": "otel-replay", "version": __version__ or "0"}
    params = {"protocolVersion": protocol, "capabilities": {}, "clientInfo": client}
    return {
        "jsonrpc": "2.0",
        "id": "otel-replay-initialize",
        "method": "initialize",
        "params": params,
    }


def error_message(request_id: JSON, message: str, code: int = -32603) -> dict[str, Any]:
    """A JSON-RPC error answering ``request_id`` (a miss: the client shows ``message``)."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def response_id(data: str) -> JSON:
    """The id of the JSON-RPC response an event's data holds, else None."""
    try:
        message = json.loads(data)
    except ValueError:
        return None
    return message.get("id") if kind(message) == "response" else None


def answer_with_id(response: Response, request_id: JSON) -> Response:
    """A recorded answer readdressed to ``request_id``: the JSON-RPC response (the body,
    or the event carrying it) gets the id the client's request has now."""
    body = response.body
    if isinstance(body, dict) and kind(body) == "response":
        body = {**body, "id": request_id}
    events = response.events
    if events is not None:
        events = [_readdressed(event, request_id) for event in events]
    return Response(status=response.status, headers=response.headers, body=body, events=events)


def _readdressed(event: SSEEvent, request_id: JSON) -> SSEEvent:
    try:
        message = json.loads(event.data)
    except ValueError:
        return event
    if kind(message) == "response":
        message = {**message, "id": request_id}
    else:  # a listen stream's event names its request in _meta
        params = message.get("params") if isinstance(message, dict) else None
        if not isinstance(params, dict):
            return event
        meta = params.get("_meta")
        if not isinstance(meta, dict) or SUBSCRIPTION_META not in meta:
            return event
        meta = {**meta, SUBSCRIPTION_META: request_id}
        message = {**message, "params": {**params, "_meta": meta}}
    data = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    return SSEEvent(data=data, event=event.event, t=event.t)


def speaks_2026(protocol: str | None) -> bool:
    """Whether ``protocol`` (a revision's date) is the 2026 revision or later, whose
    results carry ``resultType``."""
    return bool(protocol) and str(protocol) >= MODERN_VERSION


def with_result_type(response: Response) -> Response:
    """A JSON answer whose result lacks ``resultType`` (read from a trace, or recorded
    from a 2025 server) completed for a 2026 client, which requires it."""
    body = response.body
    if not (isinstance(body, dict) and isinstance(body.get("result"), dict)):
        return response
    if "resultType" in body["result"]:
        return response
    result = {**body["result"], "resultType": "complete"}
    return dataclasses.replace(response, body={**body, "result": result})


def answer_message(response: Response) -> JSON:
    """The JSON-RPC response a recorded answer holds (the body, or the last event's that
    is one), else None."""
    if response.events is None:
        return response.body
    for event in reversed(response.events):
        try:
            message = json.loads(event.data)
        except ValueError:
            continue
        if kind(message) == "response":
            return message
    return None
