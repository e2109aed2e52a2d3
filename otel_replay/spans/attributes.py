"""The project's own span attributes (``otel_replay.*``): the layout ``spans.encode``
writes and ``readers.own`` reads back, versioned by ``SPAN_FORMAT_VERSION``."""

from __future__ import annotations

SPAN_FORMAT_VERSION = 3
"""Version of the ``otel_replay.*`` attribute layout: 3 may store the request body's lists
by reference to earlier spans' (``REQUEST_LISTS``), and marks only such spans (a span that
refers to no earlier list says 2, so older readers still read it); 2 may store the request
body as pieces (``REQUEST_TEMPLATE``); 1 always holds it whole. A reader refuses a newer
one."""
PIECES_FORMAT_VERSION = 2
"""The version of a span whose body refers to no earlier list."""

SCOPE_NAME = "otel-replay"
"""The instrumentation scope of the gateway's spans."""
OWN_SOURCE = "otel-replay"
"""The ``source`` of an exchange the gateway recorded itself."""

P = "otel_replay."
FORMAT_ATTRIBUTE = P + "format_version"
"""Marks a span as otel-replay's own (``readers.own`` reads it back)."""

OPERATION = P + "operation"
ENDPOINT = P + "endpoint"
METHOD = P + "method"
STREAM = P + "stream"
SOURCE = P + "source"
REPLAYED = P + "replayed"
REQUEST_BODY = P + "request.body"
REQUEST_TEMPLATE = P + "request.template"
"""The request body with each long string replaced by a piece's marker; the body itself is
the template with ``REQUEST_REFS`` filled in (``readers.pieces``)."""
REQUEST_REFS = P + "request.refs"
"""``[[path, id], ...]``: where in ``REQUEST_TEMPLATE`` each piece goes."""
REQUEST_LISTS = P + "request.lists"
"""``[[path, own, earlier, count], ...]``: the template's list or object at ``path`` (a
field of the body) is known to later spans as ``own`` (when not null). When ``earlier``
is not null, a list's first element stands for the first ``count`` items of the list an
earlier span made known as ``earlier``, or, with ``count`` null, the value at ``path``
stands for that span's object; either reads ``otel-replay:piece:<earlier>``."""
PIECES = P + "pieces"
"""``{id: text}``: long strings stored for the first time in this span, outside the
GenAI attributes."""
PIECES_INLINE = P + "pieces.inline"
"""``[[attribute, path, id], ...]``: long strings stored for the first time in this span
inside a GenAI attribute (``gen_ai.input.messages``...), read from there."""
PIECE_MARKER = "otel-replay:piece:"
"""A long string stored once per trace file reads ``otel-replay:piece:<id>`` wherever it
comes again: in ``REQUEST_TEMPLATE`` and in the GenAI attributes of later spans."""
REQUEST_CANONICAL = P + "request.canonical"
REQUEST_KNOWN = P + "request.known"
RESPONSE_STATUS = P + "response.status"
RESPONSE_HEADERS = P + "response.headers"
RESPONSE_BODY = P + "response.body"
RESPONSE_BODY_IS_JSON = P + "response.body_is_json"
RESPONSE_EVENTS = P + "response.events"
RESPONSE_FAULT = P + "response.fault"
PROVENANCE = P + "provenance"
"""A forked run's call (JSON): its place in the run, replayed or live, and the model that
answered (``Exchange.provenance``)."""

MISS = P + "miss"
"""On a miss span (``spans.miss``): the miss line the agent got. A miss span carries no
model call, so no reader turns it into an exchange."""
MISS_COMPONENT = P + "miss.component"
MISS_WHY = P + "miss.why"
MISS_PROVIDER = P + "miss.provider"
MISS_PATH = P + "miss.path"
