"""MLflow's tracing server: its REST API's traces (v3), back into OTLP spans.

An agent sends its spans to MLflow over OTLP (``POST /v1/traces`` with the
``x-mlflow-experiment-id`` header); MLflow keeps them in an experiment, under the id
``tr-`` + the OpenTelemetry trace id. ``POST /api/3.0/mlflow/traces/search`` lists an
experiment's traces (oldest first, 500 a page; the time window and a single
``service.name`` in its filter), ``GET /api/3.0/mlflow/traces/get?trace_id=…`` answers one
with its spans: OTLP spans in proto3 JSON (base64 ids), not quite as they were sent.
MLflow reads every string attribute as JSON where it parses, so the JSON text an
instrumentation wrote (``input.value``, ``gen_ai.input.messages``,
``llm.invocation_parameters``) comes back as an array or a map: such values are made JSON
text again. It drops the resource and the instrumentation scope (the service's name stays
among the trace's tags, and is put back as the resource's) and adds attributes of its
own (``mlflow.*``), which no reader takes.

Credentials as MLflow's own client reads them: ``MLFLOW_TRACKING_TOKEN`` (a bearer
token), else ``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD`` (basic).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

from google.protobuf.json_format import ParseDict, ParseError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from otel_replay.core import envvars, genai
from otel_replay.core.errors import SourceError
from otel_replay.otlp.attributes import any_value_to_python, dict_to_attributes
from otel_replay.readers import Selection
from otel_replay.sources.pull import Pull
from otel_replay.sources.transport import Backend, basic_auth
from otel_replay.sources.where import Where

__all__ = ["MlflowPull", "restore_value", "trace_request"]

PAGE = 500  # traces a search lists (the most MLflow answers)
DEFAULT_EXPERIMENT = "0"  # MLflow's "Default" experiment
TRACE_PREFIX = "tr-"
_CREDENTIALS = (
    f"{envvars.MLFLOW_TRACKING_TOKEN}, or {envvars.MLFLOW_TRACKING_USERNAME} / "
    f"{envvars.MLFLOW_TRACKING_PASSWORD}"
)


class MlflowPull(Pull):
    """An MLflow experiment's traces (``0``, the Default experiment, when the address
    names none)."""

    def __init__(self, where: Where, selection: Selection) -> None:
        super().__init__(where, selection)
        self.backend = Backend(where, _auth(where), _CREDENTIALS)
        self.experiment = where.path or DEFAULT_EXPERIMENT
        self._checked = False

    def fetch(self) -> Iterator[ExportTraceServiceRequest]:
        for trace_id in self.trace_ids():
            doc = self._get(trace_id)
            if doc is None:
                continue  # not in this experiment: named when the pull ends
            request = trace_request(doc)
            if request.resource_spans:
                yield request

    def trace_ids(self) -> list[str]:
        self._experiment_exists()
        if self.selection.trace_ids:
            return sorted(self.selection.trace_ids)
        ids: list[str] = []
        token = ""
        while True:
            page = self._search(token)
            traces = page.get("traces", [])
            if not isinstance(traces, list):
                raise SourceError(self.name, "the trace search answered without 'traces'")
            for info in traces:
                trace_id = info.get("trace_id") if isinstance(info, dict) else None
                if isinstance(trace_id, str):
                    ids.append(trace_id.removeprefix(TRACE_PREFIX))
            token = str(page.get("next_page_token") or "")
            if not token or not traces:
                return list(dict.fromkeys(ids))

    def _experiment_exists(self) -> None:
        if self._checked:
            return
        query = {"experiment_id": self.experiment}
        missing = f"no experiment {self.experiment!r}"
        self._json(self.backend.open("/api/2.0/mlflow/experiments/get", query, missing=missing))
        self._checked = True

    def _search(self, token: str) -> dict[str, Any]:
        location = {
            "type": "MLFLOW_EXPERIMENT",
            "mlflow_experiment": {"experiment_id": self.experiment},
        }
        body: dict[str, Any] = {
            "locations": [location],
            "max_results": PAGE,
            "order_by": ["timestamp_ms ASC"],
        }
        chosen = self.selection_filter()
        if chosen:
            body["filter"] = chosen
        if token:
            body["page_token"] = token
        answer = self.backend.open(
            "/api/3.0/mlflow/traces/search",
            body=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            missing="no trace search API (MLflow 3 or later serves it)",
        )
        page = self._json(answer)
        if not isinstance(page, dict):
            raise SourceError(self.name, "the trace search answered with something not an object")
        return page

    def selection_filter(self) -> str:
        """The selection in MLflow's search syntax: the time window, and the service when
        one is named (several are selected by the readers)."""
        clauses = []
        select = self.selection
        if select.since_ns is not None:
            clauses.append(f"trace.timestamp_ms >= {select.since_ns // 1_000_000}")
        if select.until_ns is not None:
            clauses.append(f"trace.timestamp_ms < {-(-select.until_ns // 1_000_000)}")
        services = sorted(select.services or ())
        if len(services) == 1 and "'" not in services[0]:
            clauses.append(f"tag.`{genai.SERVICE_NAME}` = '{services[0]}'")
        return " AND ".join(clauses)

    def _get(self, trace_id: str) -> dict[str, Any] | None:
        query = {"trace_id": TRACE_PREFIX + trace_id}
        answer = self.backend.open("/api/3.0/mlflow/traces/get", query)
        if answer is None:
            return None
        doc = self._json(answer)
        trace = doc.get("trace") if isinstance(doc, dict) else None
        if not isinstance(trace, dict):
            raise SourceError(self.name, f"trace {trace_id}: answered without 'trace'")
        info = trace.get("trace_info") or {}
        where = (info.get("trace_location") or {}).get("mlflow_experiment") or {}
        if self.where.path and where.get("experiment_id") not in (None, self.experiment):
            return None  # another experiment's
        return trace

    def _json(self, answer: Any) -> Any:
        data = self.backend.read(answer)
        self.read += len(data)
        try:
            return json.loads(data)
        except ValueError:
            raise SourceError(self.name, "answered with something not JSON") from None


def _auth(where: Where) -> dict[str, str]:
    token = os.environ.get(envvars.MLFLOW_TRACKING_TOKEN)
    if token:
        return {"Authorization": f"Bearer {token}"}
    user = where.user or os.environ.get(envvars.MLFLOW_TRACKING_USERNAME)
    password = where.password or os.environ.get(envvars.MLFLOW_TRACKING_PASSWORD) or ""
    return {"Authorization": basic_auth(user, password)} if user else {}


def trace_request(trace: Mapping[str, Any]) -> ExportTraceServiceRequest:
    """One trace of MLflow's (``trace_info`` and ``spans``) as an export request."""
    spans = [s for s in trace.get("spans") or () if isinstance(s, dict)]
    request = ExportTraceServiceRequest()
    if not spans:
        return request
    tags = (trace.get("trace_info") or {}).get("tags") or {}
    resource_spans = request.resource_spans.add()
    service = tags.get(genai.SERVICE_NAME)
    if isinstance(service, str):
        resource_spans.resource.attributes.extend(dict_to_attributes({genai.SERVICE_NAME: service}))
    into = resource_spans.scope_spans.add().spans
    for doc in spans:
        span = into.add()
        try:
            ParseDict(doc, span, ignore_unknown_fields=True)
        except ParseError as exc:
            raise SourceError("mlflow", f"a span not in OTLP's form: {exc}") from None
        for attribute in span.attributes:
            restore_value(attribute.value)
    return request


def restore_value(value: AnyValue) -> None:
    """An attribute's value as the instrumentation wrote it: a map, or a list holding
    one, that MLflow parsed from JSON text is that text again (OTLP's own arrays hold
    plain values, and are left as they are)."""
    kind = value.WhichOneof("value")
    if kind == "kvlist_value" or (
        kind == "array_value"
        and any(
            v.WhichOneof("value") in ("kvlist_value", "array_value")
            for v in value.array_value.values
        )
    ):
        text = json.dumps(any_value_to_python(value), ensure_ascii=False)
        value.Clear()
        value.string_value = text
