"""Validate written cassettes against schemas/cassette.schema.json (used from conftest)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "cassette.schema.json"


@lru_cache(maxsize=1)
def cassette_validator() -> jsonschema.protocols.Validator:
    """A draft 2020-12 validator for the cassette schema (the schema itself checked once)."""
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def schema_errors(doc: Any) -> list[str]:
    """Every schema violation in a parsed cassette, as ``path: message`` lines."""
    errors = sorted(cassette_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
    return [f"{e.json_path}: {e.message}" for e in errors]


def validate_cassette_file(path: str | Path) -> None:
    """Raise AssertionError naming every violation when the file does not match the schema."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    errors = schema_errors(doc)
    if errors:
        raise AssertionError(f"{path} does not match the cassette schema:\n" + "\n".join(errors))
