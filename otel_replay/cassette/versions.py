"""Every version of the cassette file format: a codec to read and write it, or a migration.

A document is decoded by the codec of its version; an older version without a codec is
first converted, step by step through ``MIGRATIONS``, to one that has one. A version newer
than every codec is refused with "upgrade otel-replay". New cassettes are written in
``FORMAT_VERSION``. A new format is one module with its codec and one row in ``CODECS``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from otel_replay.cassette.format import Cassette, CassetteCodec
from otel_replay.cassette.v1 import V1
from otel_replay.cassette.v2 import V2
from otel_replay.core.errors import CassetteError, CassetteVersionError
from otel_replay.core.exchange import JSON

TOOL_PROVIDER = "mcp"
"""The provider of a tool call's interaction (``providers.mcp.MCP``): kept in
``Cassette.tools``."""

__all__ = [
    "CODECS",
    "FORMAT_VERSION",
    "MIGRATIONS",
    "codec_for",
    "convert_0_to_1",
    "convert_1_to_2",
    "decode",
    "migrate",
    "version_of",
]

CODECS: dict[int, CassetteCodec] = {1: V1, 2: V2}
"""The codec of each version this otel-replay reads and writes."""

FORMAT_VERSION = 2
"""The version new cassettes are written in."""


def convert_0_to_1(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 0 (unversioned) kept ``exchanges`` and top-level ``command`` /
    ``recorded_at``; version 1 names the list ``interactions`` and groups provenance
    under ``source``."""
    out: dict[str, Any] = {"version": 1}
    source = doc.get("source")
    source = dict(source) if isinstance(source, dict) else {}
    for key in ("command", "recorded_at"):
        if key in doc:
            source.setdefault(key, doc[key])
    out["source"] = source
    out["interactions"] = doc.get("exchanges", doc.get("interactions", []))
    return out


def convert_1_to_2(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 1 wrote every interaction out in full; version 2 keeps each shared value
    once in ``table`` and derives canonical requests the raw ones give back. Raises
    ``CassetteError`` (at ``<version 1>``) for a document version 1 cannot read."""
    return V2.to_json(V1.decode(doc, "<version 1>"))


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    0: convert_0_to_1,
    1: convert_1_to_2,
}
"""``MIGRATIONS[n]`` converts a version-``n`` document to version ``n + 1``."""


def codec_for(version: int = FORMAT_VERSION) -> CassetteCodec:
    """The codec writing and reading ``version``; ValueError for a version without one."""
    try:
        return CODECS[version]
    except KeyError:
        raise ValueError(f"no codec for cassette format version {version}") from None


def version_of(doc: dict[str, Any], path: str = "<string>") -> int:
    """The document's format version (0 for the unversioned form); a CassetteError when it
    is missing or malformed, a CassetteVersionError when it is newer than every codec."""
    if "version" not in doc:
        if "exchanges" in doc:
            return 0
        raise CassetteError(path, "version", "missing (is this an otel-replay cassette?)")
    version = doc["version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise CassetteError(path, "version", f"expected a non-negative integer, got {version!r}")
    newest = max(CODECS)
    if version > newest:
        raise CassetteVersionError(path, version, newest)
    return version


def migrate(doc: dict[str, Any], path: str = "<string>") -> tuple[int, dict[str, Any]]:
    """The document converted through ``MIGRATIONS`` to the first version, its own or
    later, that has a codec; with that version."""
    version = version_of(doc, path)
    while version not in CODECS:
        step = MIGRATIONS.get(version)
        if step is None:
            raise CassetteError(path, "version", f"version {version} can no longer be read")
        doc = step(doc)
        version += 1
    return version, doc


def decode(doc: JSON, path: str = "<string>") -> Cassette:
    """A Cassette from a parsed document of any supported version."""
    if not isinstance(doc, dict):
        raise CassetteError(path, "", "expected a JSON object at the top level")
    version, doc = migrate(doc, path)
    cassette = CODECS[version].decode(doc, path)
    if any(ex.provider == TOOL_PROVIDER for ex in cassette.interactions):
        calls = cassette.interactions
        cassette.interactions = [ex for ex in calls if ex.provider != TOOL_PROVIDER]
        cassette.tools = [ex for ex in calls if ex.provider == TOOL_PROVIDER]
    return cassette
