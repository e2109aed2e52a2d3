"""Langfuse: its public API's traces, each with its observations, back into OTLP spans.

``GET /api/public/traces/{traceId}`` answers a trace with its observations; without trace
ids, ``GET /api/public/traces`` (page by page, oldest first, the time window in
``fromTimestamp`` / ``toTimestamp``) lists them first. Langfuse v4 serves neither: there
``GET /api/public/v2/observations`` answers a trace's observations (``traceId``; input and
output as JSON text), and the observations of a time window name its traces. Basic
authentication: the project's public key (``LANGFUSE_PUBLIC_KEY``) as the user, its
secret key (``LANGFUSE_SECRET_KEY``) as the password, the way Langfuse's own SDKs send
them.

Langfuse keeps a model call as an observation of type ``GENERATION``, not as the span
that was sent: ``model``, ``modelParameters``, ``input`` (the messages: a list of
OpenAI-style messages, ``{"messages", "tools"}`` as its OpenAI integration writes it, or
the GenAI parts form of a span that came in over OTLP, its system instructions put first
as a message), ``output`` (the answer's message, or the output messages) and
``usageDetails``. Each becomes a span carrying the GenAI semantic-convention attributes,
which the semantic-convention reader takes as it takes any such view: what Langfuse kept
is compared, parameters by the names it kept them under, the rest not (``doctor`` says
which). The provider is the one the span named when it came in over OTLP (Langfuse keeps
that span's other attributes in ``metadata.attributes``), else the one its model's name
says. A ``TOOL`` observation becomes an ``execute_tool`` span with its arguments and
result; the others keep their name, times and place in the tree.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otel_replay.core import envvars, genai
from otel_replay.core.errors import ConfigError, SourceError
from otel_replay.otlp.attributes import dict_to_attributes
from otel_replay.providers import mcp as wire
from otel_replay.providers.parts import message, parse_arguments, text_part
from otel_replay.readers import Selection
from otel_replay.readers.messages import message_from_plain, norm_message
from otel_replay.sources.isotime import iso, ns_of
from otel_replay.sources.pull import Pull
from otel_replay.sources.transport import Backend, basic_auth
from otel_replay.sources.where import Where

__all__ = ["SCOPE", "LangfusePull", "otlp_span", "trace_request"]

PAGE = "100"  # traces a page of the list (the API's own default is 50)
OBSERVATIONS_PAGE = "1000"  # observations a page of the v2 API (its most)
TRACES = "/api/public/traces"
OBSERVATIONS = "/api/public/v2/observations"
FIELDS = "core,basic,time,io,metadata,model,usage"
"""The v2 observations API's field groups a model call needs."""
NO_API = f"no trace API (neither {TRACES} nor {OBSERVATIONS})"
SCOPE = "langfuse"
"""The instrumentation scope of the spans made from observations: ``doctor`` counts
them under it, as a view Langfuse reshaped."""
TYPE = "langfuse.observation.type"
_HEX = re.compile(r"[0-9a-f]+")
_OTEL_ID = re.compile(r"[0-9a-f]{32}")
_CREDENTIALS = f"{envvars.LANGFUSE_PUBLIC_KEY} / {envvars.LANGFUSE_SECRET_KEY}"
_KEPT = (genai.PROVIDER_NAME, genai.SYSTEM, genai.OPERATION_NAME, genai.RESPONSE_ID)
"""What is taken of ``metadata.attributes`` (the attributes of a span Langfuse took in
over OTLP and kept beside what it read): the names of the call, never its content, which
is read from the observation's own fields."""
_FILLED_IN = {"temperature": 1, "top_p": 1, "frequency_penalty": 0, "presence_penalty": 0}
"""What Langfuse's OpenAI integration records for a parameter the call did not set: a
call that set one to this value cannot be told from one that did not, so it is not
compared."""
_MODEL_PROVIDERS = (("claude", "anthropic"), ("gemini", "gemini"))
"""A model's name prefix and its provider, for a generation that names none (OpenAI's
otherwise, as Langfuse's OpenAI integration records them)."""


class LangfusePull(Pull):
    """A Langfuse project's traces (the project the keys belong to)."""

    def __init__(self, where: Where, selection: Selection) -> None:
        super().__init__(where, selection)
        if selection.services:
            raise ConfigError(
                "--service: Langfuse keeps no service.name to select by; "
                "name the traces (--trace-id) or a time window (--since / --until)"
            )
        for trace_id in selection.trace_ids or ():
            if not _OTEL_ID.fullmatch(trace_id):
                raise ConfigError(
                    f"--trace-id {trace_id}: Langfuse traces are named here by their "
                    "OpenTelemetry id, 32 hexadecimal digits (select others by --since / --until)"
                )
        public = where.user or os.environ.get(envvars.LANGFUSE_PUBLIC_KEY)
        secret = where.password or os.environ.get(envvars.LANGFUSE_SECRET_KEY)
        headers = {"Authorization": basic_auth(public, secret)} if public and secret else {}
        self.backend = Backend(where, headers, _CREDENTIALS)
        self.root = f"/{where.path}" if where.path else ""  # a Langfuse served under a path

    def fetch(self) -> Iterator[ExportTraceServiceRequest]:
        for trace_id in self.trace_ids():
            doc = self._trace(trace_id)
            if doc is None:
                continue  # an unknown id: named when the pull ends
            self.found.add(trace_id)
            request = trace_request(doc)
            if request.resource_spans:
                yield request

    def trace_ids(self) -> list[str]:
        if self.selection.trace_ids:
            return sorted(self.selection.trace_ids)
        ids: list[str] = []
        page = 1
        window = self._window("fromTimestamp", "toTimestamp")
        while True:
            query = [("page", str(page)), ("limit", PAGE), ("orderBy", "timestamp.asc")]
            listed = self._json(TRACES, [*query, ("fields", "core"), *window])
            if listed is None:  # Langfuse v4: its traces are read from the observations
                found = self._observations([("fields", "core")], NO_API)
                return list(dict.fromkeys(str(o.get("traceId")) for o in found))
            data = listed.get("data") if isinstance(listed, dict) else None
            if not isinstance(data, list):
                raise SourceError(self.name, "the trace list answered without 'data'")
            ids += [str(t["id"]) for t in data if isinstance(t, dict) and t.get("id")]
            meta = listed.get("meta") if isinstance(listed, dict) else None
            pages = meta.get("totalPages") if isinstance(meta, dict) else None
            if not data or not isinstance(pages, int) or page >= pages:
                return list(dict.fromkeys(ids))
            page += 1

    def _trace(self, trace_id: str) -> Mapping[str, Any] | None:
        """A trace with its observations: from the trace API, else (Langfuse v4, which
        serves no trace API) from the observations API."""
        doc = self._json(f"{TRACES}/{quote(trace_id, safe='')}")
        if doc is not None:
            if not isinstance(doc, dict):
                raise SourceError(self.name, f"trace {trace_id}: not an object")
            return doc
        found = self._observations([("traceId", trace_id), ("fields", FIELDS)], None)
        return {"id": trace_id, "observations": [_from_v2(o) for o in found]} if found else None

    def _observations(self, query: list[tuple[str, str]], missing: str | None) -> list[Any]:
        """Every observation ``GET /api/public/v2/observations`` answers (cursor by
        cursor), within the time window; none when the API is absent and ``missing`` is
        None."""
        found: list[Any] = []
        cursor = ""
        window = self._window("fromStartTime", "toStartTime")
        while True:
            paged = [("limit", OBSERVATIONS_PAGE), ("expandMetadata", "attributes"), *window]
            paged += [("cursor", cursor)] if cursor else []
            page = self._json(OBSERVATIONS, [*query, *paged], missing)
            if page is None:
                return found
            data = page.get("data") if isinstance(page, dict) else None
            if not isinstance(data, list):
                raise SourceError(self.name, "the observations API answered without 'data'")
            found += [o for o in data if isinstance(o, dict)]
            meta = page.get("meta")
            cursor = str((meta.get("cursor") if isinstance(meta, dict) else None) or "")
            if not cursor or not data:
                return found

    def _window(self, since: str, until: str) -> list[tuple[str, str]]:
        """The time window as the query parameters ``since`` and ``until``."""
        bounds = ((since, self.selection.since_ns), (until, self.selection.until_ns))
        return [(name, iso(ns)) for name, ns in bounds if ns is not None]

    def _json(
        self, path: str, query: list[tuple[str, str]] | None = None, missing: str | None = None
    ) -> Any:
        """The JSON answer to ``GET path?query``; None for a 404 unless ``missing``."""
        answer = self.backend.open(self.root + path, query, missing=missing)
        if answer is None:
            return None
        data = self.backend.read(answer)
        self.read += len(data)
        try:
            return json.loads(data)
        except ValueError:
            raise SourceError(self.name, f"{path}: not JSON") from None


def _from_v2(observation: Mapping[str, Any]) -> dict[str, Any]:
    """An observation of the v2 API in the form of the trace API's: the model under its
    name there, input and output (always text in v2) read as the JSON they hold."""
    model = observation.get("providedModelName") or observation.get("model")
    return {
        **observation,
        "model": model,
        "input": parse_arguments(observation.get("input")),  # JSON text parsed, else as is
        "output": parse_arguments(observation.get("output")),
    }


def trace_request(doc: Mapping[str, Any]) -> ExportTraceServiceRequest:
    """One trace's observations as an export request."""
    request = ExportTraceServiceRequest()
    observations = [o for o in doc.get("observations") or () if isinstance(o, Mapping)]
    if not observations:
        return request
    trace_id = _id(str(doc.get("id") or ""), 16)
    scope = request.resource_spans.add().scope_spans.add()
    scope.scope.name = SCOPE
    for observation in sorted(observations, key=lambda o: ns_of(o.get("startTime"))):
        scope.spans.append(otlp_span(trace_id, observation))
    return request


def otlp_span(trace_id: bytes, observation: Mapping[str, Any]) -> Span:
    """An OTLP span from one of Langfuse's observations."""
    kind = str(observation.get("type") or "SPAN").upper()
    parent = observation.get("parentObservationId")
    span = Span(
        trace_id=trace_id,
        span_id=_id(str(observation.get("id") or ""), 8),
        parent_span_id=_id(str(parent), 8) if parent else b"",
        name=str(observation.get("name") or kind.lower()),
        kind=Span.SPAN_KIND_CLIENT if kind == "GENERATION" else Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=ns_of(observation.get("startTime")),
        end_time_unix_nano=ns_of(observation.get("endTime")),
    )
    attributes: dict[str, Any] = {TYPE: kind}
    if kind == "GENERATION":
        attributes.update(generation_attributes(observation))
    elif kind == "TOOL":
        attributes.update(_tool_attributes(observation, span.name))
    span.attributes.extend(dict_to_attributes(attributes))
    if observation.get("level") == "ERROR":
        span.status.code = Status.STATUS_CODE_ERROR
        span.status.message = str(observation.get("statusMessage") or "")
    return span


def generation_attributes(observation: Mapping[str, Any]) -> dict[str, Any]:
    """The GenAI attributes of a generation: what Langfuse kept of the call."""
    metadata = observation.get("metadata")
    carried = metadata.get("attributes") if isinstance(metadata, Mapping) else None
    kept = {k: carried[k] for k in _KEPT if k in carried} if isinstance(carried, Mapping) else {}
    model = observation.get("model")
    out: dict[str, Any] = {genai.OPERATION_NAME: "chat", **kept}
    if genai.PROVIDER_NAME not in out and genai.SYSTEM not in out:
        out[genai.PROVIDER_NAME] = _provider(model)
    if isinstance(model, str) and model:
        out[genai.REQUEST_MODEL] = model
    parameters = observation.get("modelParameters")
    for name, value in parameters.items() if isinstance(parameters, Mapping) else ():
        param = genai.PARAM_OF_NAME.get(str(name))
        found = None if param is None or not param.read else _parameter(param, str(name), value)
        if param is not None and found is not None:
            out[param.attribute] = found
    messages, tools = _input(observation.get("input"))
    if messages is not None:
        out[genai.INPUT_MESSAGES] = json.dumps(messages, ensure_ascii=False)
    if tools is not None:
        out[genai.TOOL_DEFINITIONS] = json.dumps(tools, ensure_ascii=False)
    output = _output(observation.get("output"))
    if output is not None:
        out[genai.OUTPUT_MESSAGES] = json.dumps(output, ensure_ascii=False)
    usage = observation.get("usageDetails")
    for key, attribute in (("input", "input_tokens"), ("output", "output_tokens")):
        count = usage.get(key) if isinstance(usage, Mapping) else None
        if isinstance(count, int):
            out[genai.USAGE_PREFIX + attribute] = count
    return out


def _tool_attributes(observation: Mapping[str, Any], name: str) -> dict[str, Any]:
    out: dict[str, Any] = {genai.OPERATION_NAME: wire.EXECUTE_TOOL, wire.TOOL_NAME: name}
    for field, attribute in (("input", wire.TOOL_ARGUMENTS), ("output", wire.TOOL_RESULT)):
        value = observation.get(field)
        if value is not None:
            out[attribute] = value if isinstance(value, str) else json.dumps(value)
    return out


def _input(value: Any) -> tuple[list[dict[str, Any]] | None, list[Any] | None]:
    """The messages and tools of a generation's input."""
    tools = None
    if isinstance(value, Mapping) and "messages" in value:
        listed = value.get("tools")
        tools = listed if isinstance(listed, list) else None
        value = value["messages"]
    if isinstance(value, str):
        return [message("user", [text_part(value)])], tools
    if not isinstance(value, list):
        return None, tools
    return [_message(m, "user") for m in value], tools


def _output(value: Any) -> list[dict[str, Any]] | None:
    """The output messages of a generation's output."""
    if value is None:
        return None
    if isinstance(value, str):
        return [message("assistant", [text_part(value)])]
    if isinstance(value, list):
        return [_message(m, "assistant") for m in value]
    return [_message(value, "assistant")]


def _message(raw: Any, role: str) -> dict[str, Any]:
    """A recorded message in the parts form: as it is when it is in that form, else read
    as an OpenAI-style message."""
    if not isinstance(raw, Mapping):
        return message(role, [text_part(raw)])
    raw = {"role": role, **raw} if not raw.get("role") else raw
    found = norm_message(raw) if isinstance(raw.get("parts"), list) else message_from_plain(raw)
    if isinstance(raw.get("finish_reason"), str):
        found["finish_reason"] = raw["finish_reason"]
    return found


def _provider(model: Any) -> str:
    name = model.lower() if isinstance(model, str) else ""
    return next((p for prefix, p in _MODEL_PROVIDERS if name.startswith(prefix)), "openai")


def _parameter(param: genai.Param, name: str, value: Any) -> Any:
    """A recorded parameter's value, None when it cannot be compared: Langfuse keeps
    numbers as text too (``"0.2"``); a number that is none (``"Infinity"``, the
    integration's ``max_tokens`` when unset) or the value the integration fills in for
    a parameter the call did not set (``_FILLED_IN``) says nothing the request sent."""
    if param.kind not in ("double", "int"):
        return value
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or _FILLED_IN.get(name) == value:
        return None
    return value


def _id(text: str, size: int) -> bytes:
    """An OTLP id of ``size`` bytes for a Langfuse id: its own bytes when it is hex of that
    size (as ids that came in over OTLP are; a UUID without its dashes), else a digest of
    it, so the same id always gives the same bytes."""
    plain = text.replace("-", "").lower()
    if len(plain) == 2 * size and _HEX.fullmatch(plain):
        return bytes.fromhex(plain)
    return hashlib.sha256(text.encode()).digest()[:size]
