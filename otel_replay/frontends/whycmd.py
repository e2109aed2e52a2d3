"""``otel-replay why``: explain a miss against the closest recordings."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from otel_replay import providers
from otel_replay.cassette.model import load
from otel_replay.core.errors import ConfigError
from otel_replay.matching.why import explain
from otel_replay.redaction.redact import Redactor
from otel_replay.reports.misses import last_miss
from otel_replay.session.session import matching_rules


def _request_file(path: Path, provider: str | None, api_path: str | None) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read a JSON request ({exc})") from exc
    if isinstance(data, dict) and "body" in data and "path" in data:
        record = dict(data)
    else:
        record = {"body": data, "path": api_path or "/v1/chat/completions"}
    if provider:
        record["provider"] = provider
    if api_path:
        record["path"] = api_path
    return record


def why_command(
    cassette: Path, request: Path | None, provider: str | None, api_path: str | None
) -> int:
    recorded = load(cassette)
    record = _request_file(request, provider, api_path) if request else last_miss(cassette)
    if record is None:
        print(
            f"otel-replay why: no miss recorded for {cassette} "
            "(run replay first, or pass --request FILE)",
            file=sys.stderr,
        )
        return 1
    path = str(record.get("path") or "/v1/chat/completions")
    name = record.get("provider") or providers.provider_for(path, {}).name
    body = Redactor.from_environment().json(record.get("body"))
    live = providers.get(str(name)).canonical(path, body)
    try:
        used = [int(i) for i in record.get("used", [])]
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"the recorded miss has an unreadable 'used' list ({exc})") from None
    requests = [ex.request for ex in recorded.interactions]
    print(explain(live, requests, used=used, normalizer=matching_rules()))
    return 0
