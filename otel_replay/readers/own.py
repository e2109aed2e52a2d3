"""The gateway's own spans read back: the exact exchange a span written by
``spans.exchange_to_span`` carries, without loss (the ``otel_replay.*`` attributes hold
the redacted request and response bodies, the canonical request and the timing)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay import providers
from otel_replay.core import genai
from otel_replay.core.errors import TraceFormatError
from otel_replay.core.exchange import (
    ALL_KNOWN,
    JSON,
    CanonicalRequest,
    Exchange,
    Response,
    SSEEvent,
)
from otel_replay.otlp.attributes import attributes_to_dict
from otel_replay.readers.view import span_place
from otel_replay.spans import attributes as own

__all__ = ["span_to_exchange"]

log = logging.getLogger(__name__)


def _loads(attrs: dict[str, Any], key: str) -> JSON:
    text = attrs[key]
    if not isinstance(text, str):
        raise ValueError(f"{key} is not a string")
    return json.loads(text)


def _canonical(attrs: dict[str, Any], provider: str, endpoint: str, body: JSON) -> CanonicalRequest:
    known_attr = attrs.get(own.REQUEST_KNOWN)
    known = frozenset(known_attr) & ALL_KNOWN if isinstance(known_attr, list) else ALL_KNOWN
    if body is not None:
        try:
            request = providers.get(provider).canonical(endpoint, body)
        except Exception:  # unknown provider: keep what the span states outright
            log.debug("cannot canonicalise a %s request", provider, exc_info=True)
            model = body.get("model") if isinstance(body, dict) else None
            model = model if isinstance(model, str) else attrs.get(genai.REQUEST_MODEL)
            return CanonicalRequest(endpoint, model=model, known=frozenset({"endpoint", "model"}))
        return replace(request, known=known) if known != request.known else request
    if own.REQUEST_CANONICAL in attrs:
        c = _loads(attrs, own.REQUEST_CANONICAL)
        params = c.get("params")
        return CanonicalRequest(
            endpoint,
            model=c.get("model"),
            system=c.get("system"),
            messages=c.get("messages"),
            tools=c.get("tools"),
            params=params if isinstance(params, dict) else {},
            known=known,
        )
    model = attrs.get(genai.REQUEST_MODEL)
    return CanonicalRequest(endpoint, model=model, known=frozenset({"endpoint", "model"}))


def _response(attrs: dict[str, Any]) -> Response:
    status = attrs.get(own.RESPONSE_STATUS, attrs.get(genai.HTTP_STATUS, 0))
    body: JSON = None
    if own.RESPONSE_BODY in attrs:
        is_json = attrs.get(own.RESPONSE_BODY_IS_JSON, True)
        body = _loads(attrs, own.RESPONSE_BODY) if is_json else attrs[own.RESPONSE_BODY]
    events: list[SSEEvent] | None = None
    if own.RESPONSE_EVENTS in attrs:
        events = [
            SSEEvent(data=e["data"], event=e.get("event"), t=float(e.get("t", 0.0)))
            for e in _loads(attrs, own.RESPONSE_EVENTS)
        ]
    headers = _loads(attrs, own.RESPONSE_HEADERS) if own.RESPONSE_HEADERS in attrs else {}
    return Response(
        status=int(status),
        headers=dict(headers),
        body=body,
        events=events,
        fault=attrs.get(own.RESPONSE_FAULT),
    )


def span_to_exchange(
    span: Span, resource: Resource | None = None, *, attrs: Mapping[str, Any] | None = None
) -> Exchange | None:
    """The exchange an otel-replay span carries, or None for any other span.

    Raises TraceFormatError when a span claims to be ours but its attributes are corrupt.
    ``resource`` is accepted for symmetry with the other span readers and not needed.
    ``attrs``: the span's attributes, already decoded, with a body stored as pieces put
    back together (``readers.pieces``); a body left as pieces is an error, never a guess.
    """
    del resource
    attrs = attributes_to_dict(span.attributes) if attrs is None else dict(attrs)
    if own.FORMAT_ATTRIBUTE not in attrs:
        return None
    where = f"span {span.span_id.hex() or '?'} ({span.name})"
    version = attrs[own.FORMAT_ATTRIBUTE]
    if isinstance(version, int) and version > own.SPAN_FORMAT_VERSION:
        raise TraceFormatError(where, f"written in span format {version}: upgrade otel-replay")
    if own.REQUEST_TEMPLATE in attrs and own.REQUEST_BODY not in attrs:
        raise TraceFormatError(where, "its request is stored as pieces: read it with its file")
    try:
        endpoint = str(attrs[own.ENDPOINT])
        provider = providers.surface_name(str(attrs.get(genai.PROVIDER_NAME, "")), endpoint)
        operation = attrs.get(own.OPERATION)
        if not isinstance(operation, str):
            operation = providers.get(provider).operation(endpoint)
        raw = _loads(attrs, own.REQUEST_BODY) if own.REQUEST_BODY in attrs else None
        return Exchange(
            provider=provider,
            operation=operation,
            request=_canonical(attrs, provider, endpoint, raw),
            response=_response(attrs),
            raw_request=raw,
            method=str(attrs.get(own.METHOD, "POST")),
            stream=bool(attrs.get(own.STREAM, False)),
            **span_place(span),
            source=str(attrs.get(own.SOURCE, own.OWN_SOURCE)),
            provenance=_loads(attrs, own.PROVENANCE) if own.PROVENANCE in attrs else None,
        )
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise TraceFormatError(where, f"corrupt otel_replay attributes: {exc}") from exc
