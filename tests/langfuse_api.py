"""Langfuse's public API answering from a fixture in its documented shape, as a small
aiohttp server on loopback (Langfuse's server needs PostgreSQL, ClickHouse, Redis and an
object store, which do not run here).

The shape is the one Langfuse publishes in its OpenAPI description,
``web/public/generated/api/openapi.yml`` of github.com/langfuse/langfuse at commit
62751446149b702b419a9292ddfc2280cdf74b8c: ``GET /api/public/traces/{traceId}`` answers a
``TraceWithFullDetails`` (its ``observations`` are ``ObservationsView`` objects), ``GET
/api/public/traces`` a ``Traces`` page (``data``: ``TraceWithDetails``, observation ids
only; ``meta``: ``MetaResponse``, page / limit / totalItems / totalPages); both take
Basic authentication with the public key as user and the secret key as password, and
refuse anything else with 401. Langfuse v4 serves neither: ``GET
/api/public/v2/observations`` answers ``ObservationsV2Response`` pages (``data``:
``ObservationV2`` objects with the field groups asked for, input and output always as text;
``meta.cursor``), filtered by ``traceId`` and ``fromStartTime`` / ``toStartTime``
(``langfuse_v4_app``). ``backend_fixtures/langfuse-api-trace.json`` holds every
field of those schemas; its generations are the weather agent's two calls as Langfuse's
OpenAI integration records them (``input`` ``{"messages", "tools"}``, ``output`` the
answer's message, ``modelParameters`` with the values it fills in for what the call did
not set)."""

from __future__ import annotations

import base64
import json
from typing import Any

from aiohttp import web
from backend_servers import SEEN, fixture

from otel_replay.sources.isotime import ns_of

# the properties of the schemas, as the OpenAPI description at OPENAPI_COMMIT lists them
TRACE_FIELDS = (
    "id", "timestamp", "name", "input", "output", "sessionId", "release", "version", "userId",
    "metadata", "tags", "public", "environment", "htmlPath", "latency", "totalCost",
    "observations", "scores", "_deprecation",
)  # fmt: skip
OBSERVATION_FIELDS = (
    "id", "traceId", "type", "name", "startTime", "endTime", "completionStartTime", "model",
    "modelParameters", "input", "version", "metadata", "output", "usage", "level",
    "statusMessage", "parentObservationId", "promptId", "usageDetails", "costDetails",
    "environment", "promptName", "promptVersion", "modelId", "inputPrice", "outputPrice",
    "totalPrice", "calculatedInputCost", "calculatedOutputCost", "calculatedTotalCost",
    "latency", "timeToFirstToken",
)  # fmt: skip
OBSERVATION_V2_FIELDS = (
    "id", "traceId", "startTime", "endTime", "projectId", "parentObservationId", "type",
    "isRootObservation", "name", "level", "statusMessage", "version", "environment",
    "bookmarked", "public", "userId", "sessionId", "completionStartTime", "createdAt",
    "updatedAt", "input", "output", "metadata", "providedModelName", "internalModelId",
    "modelParameters", "usageDetails", "costDetails", "totalCost", "usagePricingTierName",
    "promptId", "promptName", "promptVersion", "latency", "timeToFirstToken", "modelId",
    "inputPrice", "outputPrice", "totalPrice", "traceName", "tags", "release",
)  # fmt: skip
OBSERVATION_V2_REQUIRED = (
    "id", "traceId", "startTime", "endTime", "projectId", "parentObservationId", "type",
    "modelId", "inputPrice", "outputPrice", "totalPrice",
)  # fmt: skip
PUBLIC_KEY = "pk-lf-0b4c6a3e-test"
SECRET_KEY = "sk-lf-9d1f2e7a-test"
OPENAPI_COMMIT = "62751446149b702b419a9292ddfc2280cdf74b8c"


def langfuse_trace() -> dict[str, Any]:
    return fixture("langfuse-api-trace.json")


def quiet_trace() -> dict[str, Any]:
    """A second trace, later, whose one observation is a span: no model call."""
    doc = langfuse_trace()
    root = {**doc["observations"][0], "id": "1c0ffee1c0ffee11", "name": "nightly check"}
    root["traceId"] = "0af7651916cd43dd8448eb211c80319c"
    return {
        **doc,
        "id": root["traceId"],
        "name": "nightly check",
        "timestamp": "2026-11-30T11:00:00.000Z",
        "htmlPath": f"/project/clkpwwm0m000gmm094odg11gi/traces/{root['traceId']}",
        "observations": [{**root, "startTime": "2026-11-30T11:00:00.000Z"}],
    }


def langfuse_app(traces: list[dict[str, Any]] | None = None) -> web.Application:
    """The two endpoints, over ``traces`` (the fixture's trace and a quiet one)."""
    held = traces if traces is not None else [langfuse_trace(), quiet_trace()]
    by_id = {t["id"]: t for t in held}
    expected = "Basic " + base64.b64encode(f"{PUBLIC_KEY}:{SECRET_KEY}".encode()).decode()
    app = web.Application()
    app[SEEN] = []

    def refused(request: web.Request) -> web.Response | None:
        if request.headers.get("Authorization") == expected:
            return None
        message = "Invalid credentials. Confirm that you've configured the correct host."
        return web.json_response({"message": message}, status=401)

    async def one(request: web.Request) -> web.Response:
        if (denied := refused(request)) is not None:
            return denied
        found = by_id.get(request.match_info["trace_id"])
        if found is None:
            message = "Trace not found within authorized project"
            return web.json_response(
                {"message": message, "error": "LangfuseNotFoundError"}, status=404
            )
        return web.json_response(found)

    async def listed(request: web.Request) -> web.Response:
        if (denied := refused(request)) is not None:
            return denied
        query = request.query
        app[SEEN].append(dict(query))
        since = ns_of(query.get("fromTimestamp")) if "fromTimestamp" in query else None
        until = ns_of(query.get("toTimestamp")) if "toTimestamp" in query else None
        chosen = [
            t
            for t in sorted(held, key=lambda t: t["timestamp"])
            if (since is None or ns_of(t["timestamp"]) >= since)
            and (until is None or ns_of(t["timestamp"]) < until)
        ]
        page, limit = int(query.get("page", "1")), int(query.get("limit", "50"))
        shown = chosen[(page - 1) * limit : page * limit]
        data = [{**t, "observations": [o["id"] for o in t["observations"]]} for t in shown]
        meta = {
            "page": page,
            "limit": limit,
            "totalItems": len(chosen),
            "totalPages": -(-len(chosen) // limit),
        }
        return web.json_response({"data": data, "meta": meta})

    app.router.add_get("/api/public/traces/{trace_id}", one)
    app.router.add_get("/api/public/traces", listed)
    return app


_GROUPS = {
    "basic": ("name", "level", "statusMessage", "version", "environment"),
    "time": ("completionStartTime",),
    "io": ("input", "output"),
    "metadata": ("metadata",),
    "model": ("providedModelName", "modelParameters"),
    "usage": ("usageDetails", "costDetails"),
}


def observation_v2(observation: dict[str, Any], fields: set[str]) -> dict[str, Any]:
    """An observation of the trace API as the v2 API answers it, with the field groups
    ``fields`` (``core`` always)."""
    full = {
        **observation,
        "projectId": "clkpwwm0m000gmm094odg11gi",
        "providedModelName": observation["model"],
        "input": None if observation["input"] is None else json.dumps(observation["input"]),
        "output": None if observation["output"] is None else json.dumps(observation["output"]),
    }
    core = ("id", "traceId", "startTime", "endTime", "projectId", "parentObservationId", "type")
    kept = [*core, *(name for group in fields for name in _GROUPS.get(group, ()))]
    enriched = {"modelId": None, "inputPrice": None, "outputPrice": None, "totalPrice": None}
    return {**enriched, **{name: full[name] for name in kept}}


def langfuse_v4_app() -> web.Application:
    """Langfuse v4: the v2 observations API only, two observations a page."""
    held = [o for t in (langfuse_trace(), quiet_trace()) for o in t["observations"]]
    expected = "Basic " + base64.b64encode(f"{PUBLIC_KEY}:{SECRET_KEY}".encode()).decode()
    app = web.Application()
    app[SEEN] = []

    async def observations(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != expected:
            return web.json_response({"message": "Invalid credentials"}, status=401)
        query = request.query
        app[SEEN].append(dict(query))
        since, until = query.get("fromStartTime"), query.get("toStartTime")
        chosen = [
            o
            for o in sorted(held, key=lambda o: o["startTime"])
            if query.get("traceId") in (None, o["traceId"])
            and (since is None or ns_of(o["startTime"]) >= ns_of(since))
            and (until is None or ns_of(o["startTime"]) < ns_of(until))
        ]
        start = int(base64.b64decode(query["cursor"])) if "cursor" in query else 0
        fields = set(query.get("fields", "core,basic").split(","))
        data = [observation_v2(o, fields) for o in chosen[start : start + 2]]
        more = start + 2 < len(chosen)
        cursor = base64.b64encode(str(start + 2).encode()).decode() if more else None
        return web.json_response({"data": data, "meta": {"cursor": cursor}})

    app.router.add_get("/api/public/v2/observations", observations)
    return app
