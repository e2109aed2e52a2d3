"""The semantic-convention view shared by the span readers: parts-form normalisation and
the exchange rebuilt from a view.

Third-party instrumentations write the GenAI "parts" form with small differences (extra
keys, tool-call arguments as text, Anthropic tool schemas, system prompts as messages);
here they are brought to exactly the form the providers' ``canonical`` produces from the
request body, so a request rebuilt from a trace matches a live one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay import providers
from otel_replay.core.exchange import JSON, CanonicalRequest, Exchange, Response
from otel_replay.core.ids import hex_id
from otel_replay.providers.base import OutputView
from otel_replay.providers.parts import tool_call_part

Event = tuple[str, Mapping[str, Any], Any]
"""A GenAI event: its name, its attributes and its body (log records) or None."""

_PROVIDERS = providers.semconv_names()
_SYSTEM_ROLES = frozenset({"system", "developer"})
_FINISH = {
    "tool_calls": "tool_call",
    "tool_use": "tool_call",
    "end_turn": "stop",
    "max_tokens": "length",
}


# --- small value helpers ----------------------------------------------------------------


def span_attributes(span: Span) -> dict[str, Any]:
    from otel_replay.otlp.codec import attributes_to_dict

    return dict(attributes_to_dict(span.attributes))


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def plain(value: Any) -> JSON:
    """Attribute values as JSON: tuples (OTel arrays) become lists."""
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    return value


def json_value(value: Any) -> JSON:
    """An attribute holding JSON: text that parses as an array or object is parsed;
    structured values (OTLP kvlist / array) are returned as plain JSON."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("[", "{"):
            try:
                return json.loads(text)
            except ValueError:
                return value
        return value
    return plain(value)


def provider_name(value: Any) -> str | None:
    """Our provider name for a ``gen_ai.provider.name`` / ``gen_ai.system`` value."""
    if not isinstance(value, str):
        return None
    return _PROVIDERS.get(value.strip().lower())


def tree(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted keys unflattened: ``tool_calls.0.name`` -> ``{"tool_calls": [{"name": …}]}``."""
    root: dict[str, Any] = {}
    for key, value in flat.items():
        node = root
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = plain(value)
    result = _lists(root)
    return result if isinstance(result, dict) else {"items": result}


def _lists(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    fixed = {k: _lists(v) for k, v in node.items()}
    if fixed and all(k.isdigit() for k in fixed):
        return [fixed[k] for k in sorted(fixed, key=int)]
    return fixed


def indexed(attrs: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix + "N.rest"`` attributes grouped by N, in order: one flat dict per index."""
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        index, _, rest = key[len(prefix) :].partition(".")
        if index.isdigit() and rest:
            groups.setdefault(int(index), {})[rest] = value
    return [groups[i] for i in sorted(groups)]


# --- parts ------------------------------------------------------------------------------


def text_part(content: Any) -> dict[str, Any]:
    return {"type": "text", "content": content}


def content_parts(content: Any) -> list[dict[str, Any]]:
    """Parts for a message ``content``: text, text that is itself a JSON list of provider
    blocks (as OpenLLMetry records Anthropic content), or a list of blocks."""
    if content is None:
        return []
    if isinstance(content, str):
        parsed = json_value(content) if content.lstrip().startswith("[{") else content
        if isinstance(parsed, list) and all(isinstance(b, dict) and "type" in b for b in parsed):
            return [block_part(b) for b in parsed]
        return [text_part(content)]
    if isinstance(content, list):
        return [block_part(b) if isinstance(b, dict) else text_part(b) for b in content]
    return [{"type": "raw", "value": plain(content)}]


def block_part(block: Mapping[str, Any]) -> dict[str, Any]:
    """A provider content block (OpenAI or Anthropic) or a semconv part, as a part."""
    kind = block.get("type")
    if kind in ("text", "input_text", "output_text") and isinstance(block.get("text"), str):
        return text_part(block["text"])
    if kind == "tool_use":
        return tool_call_part(block.get("id"), block.get("name"), block.get("input"))
    if kind == "tool_result":
        return tool_response(block.get("tool_use_id"), block.get("content"))
    return norm_part(block)


def tool_response(call_id: Any, response: Any) -> dict[str, Any]:
    if isinstance(response, list):
        parts = content_parts(response)
        if parts and all(p["type"] == "text" for p in parts):
            response = "".join(str(p["content"]) for p in parts)
        else:
            response = parts
    return {"type": "tool_call_response", "id": call_id, "response": response}


def norm_part(part: Mapping[str, Any]) -> dict[str, Any]:
    """A semconv part with exactly the keys the providers' canonical form uses."""
    kind = part.get("type")
    if kind == "text":
        return text_part(part.get("content", part.get("text")))
    if kind == "tool_call":
        return tool_call_part(part.get("id"), part.get("name"), part.get("arguments"))
    if kind == "tool_call_response":
        return tool_response(part.get("id"), part.get("response", part.get("result")))
    return {str(k): plain(v) for k, v in part.items()}


def norm_message(message: Any) -> dict[str, Any]:
    if not isinstance(message, Mapping):
        return {"role": "user", "parts": content_parts(message)}
    raw_parts = message.get("parts")
    if isinstance(raw_parts, list):
        parts = [norm_part(p) if isinstance(p, Mapping) else text_part(p) for p in raw_parts]
    else:
        parts = content_parts(message.get("content"))
    if any(p["type"] == "tool_call" for p in parts):  # a None content recorded as ""
        parts = [p for p in parts if not (p["type"] == "text" and p["content"] in ("", None))]
    out: dict[str, Any] = {"role": str(message.get("role") or "user"), "parts": parts}
    if isinstance(message.get("name"), str):
        out["name"] = message["name"]
    if isinstance(message.get("finish_reason"), str):
        out["finish_reason"] = message["finish_reason"]
    return out


# --- deprecated message shapes ----------------------------------------------------------


def message_from_plain(raw: Any) -> dict[str, Any]:
    """An OpenAI-style message dict (deprecated event bodies, OpenInference messages)."""
    if not isinstance(raw, Mapping):
        return norm_message(raw)
    role = str(raw.get("role") or "user")
    if role == "tool":
        call_id = raw.get("tool_call_id", raw.get("id"))
        return {"role": "tool", "parts": [tool_response(call_id, raw.get("content"))]}
    parts = content_parts(raw.get("content"))
    for call in as_list(raw.get("tool_calls")):
        if isinstance(call, Mapping):
            function = call.get("function")
            fn = function if isinstance(function, Mapping) else call
            parts.append(tool_call_part(call.get("id"), fn.get("name"), fn.get("arguments")))
    return norm_message({"role": role, "parts": parts, "name": raw.get("name")})


def message_from_choice(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A ``gen_ai.choice`` event body: ``{index, finish_reason, message}``."""
    inner = payload.get("message")
    message = message_from_plain(
        {"role": "assistant", **(inner if isinstance(inner, Mapping) else {})}
    )
    if isinstance(payload.get("finish_reason"), str):
        message["finish_reason"] = payload["finish_reason"]
    return message


def message_from_flat(flat: Mapping[str, Any]) -> dict[str, Any]:
    """OpenLLMetry's ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` group."""
    nested = tree(flat)
    calls = [
        {"id": c.get("id"), "function": {"name": c.get("name"), "arguments": c.get("arguments")}}
        for c in as_list(nested.get("tool_calls"))
        if isinstance(c, dict)
    ]
    message = message_from_plain({**nested, "tool_calls": calls})
    if isinstance(nested.get("finish_reason"), str):
        message["finish_reason"] = nested["finish_reason"]
    return message


def tool_from_flat(flat: Mapping[str, Any]) -> Any:
    """OpenLLMetry's ``llm.request.functions.N.{name,description,parameters}``."""
    return norm_tool(
        {
            "name": flat.get("name"),
            "description": flat.get("description"),
            "parameters": json_value(flat.get("parameters")),
        }
    )


def norm_tool(tool: Any) -> Any:
    """A tool definition in the providers' canonical form (``type``, ``name``,
    ``description``, ``parameters`` plus any other keys)."""
    if not isinstance(tool, Mapping):
        return plain(tool)
    spec: Mapping[str, Any] = tool
    if isinstance(tool.get("function"), Mapping):
        spec = tool["function"]
    elif tool.get("type") not in (None, "function", "custom") and "input_schema" not in tool:
        return plain(tool)  # a built-in tool kept whole
    params = spec.get("parameters", spec.get("input_schema"))
    out: dict[str, Any] = {
        "type": "function",
        "name": spec.get("name"),
        "description": spec.get("description"),
        "parameters": json_value(params),
    }
    skip = {"type", "name", "description", "parameters", "input_schema", "function"}
    out.update({str(k): plain(v) for k, v in spec.items() if k not in skip})
    return out


# --- the exchange -----------------------------------------------------------------------


@dataclass(slots=True)
class ViewRequest:
    """A request as a semantic-convention view records it (any of the forms)."""

    provider: str
    operation: str
    model: str | None = None
    system: JSON = None
    messages: JSON = None
    tools: JSON = None
    params: dict[str, JSON] = field(default_factory=dict)
    known: frozenset[str] = frozenset({"endpoint"})


@dataclass(slots=True)
class ViewResponse:
    messages: JSON = None
    response_id: str | None = None
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    finish_reasons: list[str] = field(default_factory=list)


def system_and_messages(provider: str, system: JSON, messages: JSON) -> tuple[JSON, JSON]:
    """System instructions as parts and the remaining messages, the way the provider's
    ``canonical`` splits them: leading system/developer messages belong to ``system``."""
    parts: list[dict[str, Any]] | None = None
    if system is not None:
        items = system if isinstance(system, list) else [system]
        parts = [norm_part(p) if isinstance(p, Mapping) else text_part(p) for p in items]
    if messages is None:
        return parts, None
    normalised = [norm_message(m) for m in as_list(messages)]
    index = 0
    while index < len(normalised) and normalised[index]["role"] in _SYSTEM_ROLES:
        parts = (parts or []) + normalised[index]["parts"]
        index += 1
    return parts, normalised[index:]


def output_messages(messages: JSON, finish_reasons: Sequence[str]) -> list[dict[str, Any]]:
    """Output messages in the parts form, with semconv finish reasons."""
    out = []
    for index, message in enumerate(as_list(messages)):
        normalised = norm_message(message)
        normalised["role"] = (
            "assistant" if normalised["role"] in ("user", "") else normalised["role"]
        )
        reason = normalised.get("finish_reason")
        if reason is None and index < len(finish_reasons):
            reason = finish_reasons[index]
        if isinstance(reason, str):
            normalised["finish_reason"] = _FINISH.get(reason, reason)
        out.append(normalised)
    return out


def exchange_from_view(
    request: ViewRequest,
    response: ViewResponse,
    span: Span,
    *,
    stream: bool = False,
    source: str = "genai-semconv",
    failed: Response | None = None,
) -> Exchange:
    """The exchange for a semantic-convention view: the canonical request in the parts
    form and a response body rebuilt in the provider's own format (or ``failed``, the
    error the call ended with)."""
    provider = providers.get(request.provider)
    system, messages = system_and_messages(request.provider, request.system, request.messages)
    tools = [norm_tool(t) for t in as_list(request.tools)] if request.tools is not None else None
    canonical = CanonicalRequest(
        endpoint=provider.endpoint(request.operation),
        model=request.model,
        system=system,
        messages=messages,
        tools=tools,
        params=request.params,
        known=request.known,
    )
    output = OutputView(
        messages=output_messages(response.messages, response.finish_reasons),
        response_id=response.response_id,
        model=response.model or request.model,
        usage=response.usage,
    )
    replayed = failed
    if replayed is None:
        body = provider.response_from_view(request.operation, output)
        replayed = replay_response(request.provider, request.operation, body, stream)
    return Exchange(
        provider=request.provider,
        operation=request.operation,
        request=canonical,
        response=replayed,
        stream=stream,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        trace_id=hex_id(span.trace_id),
        span_id=hex_id(span.span_id),
        parent_span_id=hex_id(span.parent_span_id),
        source=source,
    )


def replay_response(provider: str, operation: str, body: JSON, stream: bool) -> Response:
    """A 200 response for a rebuilt body; streamed requests get the provider's own events."""
    if not stream:
        return Response(status=200, headers={"content-type": "application/json"}, body=body)
    events = providers.get(provider).stream_from_body(operation, body)
    return Response(status=200, headers={"content-type": "text/event-stream"}, events=events)
