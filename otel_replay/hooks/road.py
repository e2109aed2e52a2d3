"""The road from a tool call in the agent's process to the gateway of the run.

A run gives its agent ``OTEL_REPLAY_URL`` (the gateway) and ``OTEL_REPLAY_TOOLS``
(``replay`` unless ``--tools live``). A gateway running in this very process (the Python
API, the pytest plugin) is asked directly, by a function call; one in another process
(``otel-replay record / replay -- CMD``) over HTTP on loopback, one keep-alive connection
per thread, as ``mcp-stdio`` asks it.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
from typing import Any
from urllib.parse import urlsplit

from otel_replay.core import envvars as ev
from otel_replay.core.errors import OtelReplayError

__all__ = ["Road", "ToolRoadError", "road"]


class ToolRoadError(OtelReplayError):
    """The gateway of the run could not be asked about a tool call."""

    def __init__(self, url: str, detail: str) -> None:
        super().__init__(
            f"otel-replay: cannot ask the gateway at {url} about a tool call: {detail}"
        )


class Road:
    """Asks the gateway at ``url`` what to do with a tool call, and tells it how one ended."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        parts = urlsplit(self.url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._here = threading.local()

    def ask(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``gateway.own_tools.answer_call`` for ``doc``."""
        from otel_replay.gateway import own_tools

        session = own_tools.local(self.url)
        if session is not None:
            return own_tools.answer_call(session(), doc)
        answer = self._post(own_tools.CALL_PATH, doc)
        return answer if isinstance(answer, dict) else {}

    def tell(self, doc: dict[str, Any]) -> None:
        """``gateway.own_tools.record_call`` for ``doc``."""
        from otel_replay.gateway import own_tools

        session = own_tools.local(self.url)
        if session is not None:
            own_tools.record_call(session(), doc)
            return
        self._post(own_tools.RECORDED_PATH, doc)

    def _post(self, path: str, doc: dict[str, Any]) -> Any:
        body = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
        headers = {"content-type": "application/json"}
        for attempt in (0, 1):  # a keep-alive connection the gateway closed: once more
            connection = getattr(self._here, "connection", None)
            if connection is None:
                connection = http.client.HTTPConnection(self._host, self._port, timeout=300)
                self._here.connection = connection
            try:
                connection.request("POST", path, body, headers)
                answer = connection.getresponse()
                data = answer.read()
            except (OSError, http.client.HTTPException) as exc:
                connection.close()
                self._here.connection = None
                if attempt:
                    raise ToolRoadError(self.url, str(exc)) from exc
                continue
            if answer.status >= 300:
                raise ToolRoadError(self.url, f"HTTP {answer.status}: {data[:200]!r}")
            return json.loads(data) if data else None
        raise AssertionError("unreachable")


_ROADS: dict[str, Road] = {}
_LOCK = threading.Lock()


def road() -> Road | None:
    """The road to this run's gateway, or None outside a run, in mode ``off`` or with
    ``--tools live`` (the tool then simply runs)."""
    url = os.environ.get(ev.OTEL_REPLAY_URL)
    if not url or os.environ.get(ev.OTEL_REPLAY_TOOLS, "replay") == "live":
        return None
    if os.environ.get(ev.OTEL_REPLAY_MODE) == "off":  # telemetry only (a test suite's)
        return None
    found = _ROADS.get(url)
    if found is None:
        with _LOCK:
            found = _ROADS.setdefault(url, Road(url))
    return found
