"""``otel-replay why``: explain a miss against the closest recordings; with ``--suggest``,
print the narrowest rule that turns it into a hit."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from otel_replay import providers
from otel_replay.cassette.model import load
from otel_replay.cassette.recordings import Recordings
from otel_replay.core.errors import ConfigError
from otel_replay.core.exchange import CanonicalRequest, Exchange
from otel_replay.frontends.rulefiles import rule_sources
from otel_replay.matching.chain import Chain
from otel_replay.matching.matcher import Matcher, MatchMiss, Only
from otel_replay.matching.mcp import explain_tool
from otel_replay.matching.normalize import Normalizer
from otel_replay.matching.session_rules import cassette_rules
from otel_replay.matching.suggest import suggest as suggest_rules
from otel_replay.matching.why import explain
from otel_replay.providers import mcp
from otel_replay.providers.mcp import MCP
from otel_replay.redaction.redact import Redactor
from otel_replay.reports.misses import last_miss


def _request_file(path: Path, provider: str | None, api_path: str | None) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read a JSON request ({exc})") from exc
    except RecursionError:
        raise ConfigError(f"{path}: cannot read a JSON request (nested too deeply)") from None
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
    cassette: Path,
    request: Path | None,
    provider: str | None,
    api_path: str | None,
    *,
    rules: Path | None = None,
    suggest: bool = False,
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
    if name == MCP:  # a tool call's miss
        return _why_tool(recorded.tools, path, record, suggest)
    body = Redactor.from_environment().json(record.get("body"))
    live = providers.get(str(name)).canonical(path, body)
    try:
        used = [int(i) for i in record.get("used", [])]
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"the recorded miss has an unreadable 'used' list ({exc})") from None
    requests = [ex.request for ex in recorded.interactions]
    sources = rule_sources(cassette, rules)
    normalizer, recorded_by = cassette_rules(sources, recorded.source, str(cassette))
    # a continuation is held to the recording it continues, as the replay held it
    only = Chain(Recordings(recorded)).only(live)
    if suggest:
        return _suggest(live, requests, used, normalizer, recorded_by, str(name), only)
    print(
        explain(
            live, requests, used=used, normalizer=normalizer, recorded_by=recorded_by, only=only
        )
    )
    return 0


def _why_tool(tools: list[Exchange], path: str, record: dict[str, Any], suggest: bool) -> int:
    body = Redactor.from_environment().json(record.get("body"))
    if not isinstance(body, dict):
        raise ConfigError("the recorded miss holds no MCP request")
    request = mcp.canonical(mcp.server_of(path), body)
    used = {int(i) for i in record.get("used", []) if isinstance(i, int)}
    explained = explain_tool(request, [ex.request for ex in tools], used)
    if suggest:  # what a tool is asked counts: no rule hides it
        print(
            f"otel-replay why: {explained.splitlines()[0]}; no rule can turn it into a hit",
            file=sys.stderr,
        )
        return 1
    print(explained)
    return 0


def _suggest(
    live: CanonicalRequest,
    requests: list[CanonicalRequest],
    used: list[int],
    normalizer: Normalizer,
    recorded_by: Normalizer | None,
    provider: str,
    only: Only | None,
) -> int:
    """The rule on stdout, what it would also hide on stderr; 1 when no rule should be."""
    matcher = Matcher(requests, used=used, normalizer=normalizer, recorded_by=recorded_by)
    outcome = matcher.probe(live, only)
    if isinstance(outcome, int):
        print(
            f"otel-replay why: the request already matches recording #{outcome}; no rule needed",
            file=sys.stderr,
        )
        return 1
    if not isinstance(outcome, MatchMiss):
        print(f"otel-replay why: {outcome}; no rule can turn it into a hit", file=sys.stderr)
        return 1
    found = suggest_rules(outcome, provider)
    for reason in found.refused:
        print(f"otel-replay why: {reason}", file=sys.stderr)
    if found.refused or not found.rules:
        return 1
    print(found.toml(), end="")
    for line in found.hides:
        print(f"otel-replay why: {line}", file=sys.stderr)
    return 0
