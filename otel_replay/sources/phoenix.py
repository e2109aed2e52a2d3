"""Arize Phoenix: its REST span API, paged, back into OTLP spans.

``GET /v1/projects/{project}/spans`` (oldest first, 1,000 a page, ``trace_id`` and the
time window in the query) answers spans as Phoenix keeps them, which is not as they were
sent: attributes flattened into dotted keys; the OpenInference attributes that hold JSON
text (``metadata``, ``tool.parameters``, ``llm.prompt_template.variables``,
``document.metadata``) parsed into objects and flattened too; the span kind
(``openinference.span.kind``) moved out to ``span_kind``. They are put back into the forms
the readers know. What Phoenix does not keep (resource attributes, the OTLP span kind,
the instrumentation scope) no reader needs to replay a call.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otel_replay.core import envvars
from otel_replay.core.errors import SourceError
from otel_replay.otlp.attributes import dict_to_attributes
from otel_replay.readers import Selection
from otel_replay.sources.isotime import iso, ns_of
from otel_replay.sources.pull import Pull
from otel_replay.sources.transport import Backend
from otel_replay.sources.where import Where

__all__ = ["PhoenixPull", "otlp_span", "restore_attributes"]

PAGE = "1000"
DEFAULT_PROJECT = "default"
SPAN_KIND = "openinference.span.kind"
# the attributes Phoenix reads as JSON text and keeps as objects
_JSON_TEXT = re.compile(
    r"^(metadata|tool\.parameters|llm\.prompt_template\.variables|.*\bdocument\.metadata)"
    r"(?:\.|$)"
)
_STATUS = {"UNSET": Status.STATUS_CODE_UNSET, "OK": Status.STATUS_CODE_OK}
_STATUS_ERROR = Status.STATUS_CODE_ERROR


class PhoenixPull(Pull):
    """A Phoenix project's spans (``default`` when the URL names none)."""

    def __init__(self, where: Where, selection: Selection) -> None:
        super().__init__(where, selection)
        key = os.environ.get(envvars.PHOENIX_API_KEY)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.backend = Backend(where, headers, envvars.PHOENIX_API_KEY)
        self.project = where.path or DEFAULT_PROJECT

    def fetch(self) -> Iterator[ExportTraceServiceRequest]:
        cursor: str | None = None
        while True:
            page = self._page(cursor)
            spans = page.get("data")
            if not isinstance(spans, list):
                raise SourceError(self.name, "the span API answered without 'data'")
            if spans:
                request = ExportTraceServiceRequest()
                into = request.resource_spans.add().scope_spans.add().spans
                for doc in spans:
                    into.append(otlp_span(doc))
                yield request
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def _page(self, cursor: str | None) -> dict[str, Any]:
        query: list[tuple[str, str]] = [("limit", PAGE), ("sort", "start_time"), ("order", "asc")]
        select = self.selection
        query += [("trace_id", t) for t in sorted(select.trace_ids or ())]
        if select.since_ns is not None:
            query.append(("start_time", iso(select.since_ns)))
        if select.until_ns is not None:
            query.append(("end_time", iso(select.until_ns)))
        if cursor:
            query.append(("cursor", cursor))
        path = f"/v1/projects/{quote(self.project, safe='')}/spans"
        answer = self.backend.open(path, query, missing=f"no project {self.project!r}")
        assert answer is not None
        data = self.backend.read(answer)
        self.read += len(data)
        try:
            page = json.loads(data)
        except ValueError:
            raise SourceError(self.name, "the span API answered with something not JSON") from None
        if not isinstance(page, dict):
            raise SourceError(self.name, "the span API answered with something not an object")
        return page


def otlp_span(doc: dict[str, Any]) -> Span:
    """An OTLP span from one of Phoenix's."""
    context = doc.get("context") or {}
    span = Span(
        trace_id=bytes.fromhex(context.get("trace_id") or ""),
        span_id=bytes.fromhex(context.get("span_id") or ""),
        parent_span_id=bytes.fromhex(doc.get("parent_id") or ""),
        name=doc.get("name") or "",
        start_time_unix_nano=ns_of(doc.get("start_time")),
        end_time_unix_nano=ns_of(doc.get("end_time")),
    )
    attributes = restore_attributes(doc.get("attributes") or {})
    kind = doc.get("span_kind")
    if kind and kind != "UNKNOWN":
        attributes.setdefault(SPAN_KIND, kind)
    span.attributes.extend(dict_to_attributes(attributes))
    for event in doc.get("events") or ():
        added = span.events.add(
            name=event.get("name") or "", time_unix_nano=ns_of(event.get("timestamp"))
        )
        added.attributes.extend(dict_to_attributes(event.get("attributes") or {}))
    code = str(doc.get("status_code") or "UNSET").upper()
    span.status.code = _STATUS.get(code, _STATUS_ERROR)
    span.status.message = doc.get("status_message") or ""
    return span


def restore_attributes(flat: dict[str, Any]) -> dict[str, Any]:
    """Attributes as the instrumentation wrote them: what Phoenix parsed from JSON text
    and flattened is JSON text again."""
    out: dict[str, Any] = {}
    groups: dict[str, dict[str, Any]] = {}
    for key, value in flat.items():
        found = _JSON_TEXT.match(key)
        if found is None:
            out[key] = value
            continue
        head = found.group(1)
        if key == head:
            out[key] = value if isinstance(value, str) else json.dumps(value)
        else:
            groups.setdefault(head, {})[key[len(head) + 1 :]] = value
            out.setdefault(head, None)  # keeps the attribute's place
    for head, parts in groups.items():
        out[head] = json.dumps(_nest(parts), ensure_ascii=False)
    return out


def _nest(flat: dict[str, Any]) -> Any:
    """Dotted keys as nested objects; an object whose keys are 0…n-1 as a list."""
    tree: dict[str, Any] = {}
    for key, value in flat.items():
        *path, last = key.split(".")
        node = tree
        for part in path:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[last] = value
    return _lists(tree)


def _lists(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    items = {k: _lists(v) for k, v in node.items()}
    if (
        items
        and all(k.isdigit() for k in items)
        and sorted(map(int, items)) == [*range(len(items))]
    ):
        return [items[str(i)] for i in range(len(items))]
    return items
