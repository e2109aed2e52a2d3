"""Cassette format versions behind one codec interface: the registry, the streaming
writer's text, provenance, and the read-only recordings view."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from test_cassette import cassettes, exchanges, fast, sample

from otel_replay.cassette import versions
from otel_replay.cassette.format import Cassette
from otel_replay.cassette.model import dump, dumps, load, loads
from otel_replay.cassette.provenance import (
    build_source,
    default_source,
    extended_source,
    run_source,
)
from otel_replay.cassette.recordings import Recordings
from otel_replay.cassette.v1 import V1
from otel_replay.cassette.writer import CassetteWriter
from otel_replay.core.errors import CassetteError, CassetteVersionError
from otel_replay.core.exchange import JSON, Exchange
from otel_replay.session.session import Session

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RECORDED = sorted(
    p for p in EXAMPLES.glob("*/cassettes/*.json") if not p.name.endswith(".spans.json")
)

# --- the registry --------------------------------------------------------------------


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.parent.parent.name)
def test_a_recorded_cassette_dumps_to_its_own_text_or_converts(path: Path) -> None:
    """An example recorded as version 1 still reads and writes as version 1, and is
    rewritten as version 2 (smaller); one re-recorded since dumps to its own text."""
    text = path.read_text(encoding="utf-8")
    doc = json.loads(text)
    loaded = load(path)
    written = dumps(loaded)
    assert loads(written) == loaded
    if doc["version"] == 1:
        assert V1.encode(V1.decode(doc, str(path))) == text
        assert json.loads(written) == versions.convert_1_to_2(doc)
        assert len(written) < len(text)
    else:
        assert written == text


def test_every_codec_is_registered_under_its_version() -> None:
    assert versions.FORMAT_VERSION in versions.CODECS
    assert all(codec.version == v for v, codec in versions.CODECS.items())
    assert versions.codec_for() is versions.CODECS[versions.FORMAT_VERSION]
    with pytest.raises(ValueError, match="no codec for cassette format version 99"):
        versions.codec_for(99)


def test_a_version_newer_than_every_codec_is_refused() -> None:
    newer = max(versions.CODECS) + 1
    with pytest.raises(CassetteVersionError, match="upgrade otel-replay") as info:
        loads(json.dumps({"version": newer, "interactions": []}), "new.json")
    assert info.value.where == "version"


def test_a_version_without_a_codec_migrates_to_one_that_has() -> None:
    doc = {"exchanges": [], "command": ["agent"]}
    assert versions.migrate(doc) == (
        1,  # version 1 has a codec of its own: no conversion beyond it
        {"version": 1, "source": {"command": ["agent"]}, "interactions": []},
    )
    assert versions.decode(doc) == Cassette([], {"command": ["agent"]})


class _Tagged:
    """A stand-in later format: the v1 text with one extra top-level field."""

    version = 3

    def decode(self, doc: dict[str, Any], path: str) -> Cassette:
        if doc.get("tag") != "two":
            raise CassetteError(path, "tag", "missing")
        rest = {k: v for k, v in doc.items() if k != "tag"}
        return V1.decode({**rest, "version": 1}, path)

    def to_json(self, cassette: Cassette) -> dict[str, JSON]:
        return {**V1.to_json(cassette), "version": 3, "tag": "two"}

    def encode(self, cassette: Cassette) -> str:
        return json.dumps(self.to_json(cassette), indent=2, ensure_ascii=False) + "\n"

    def encoder(self, folder: Path | None = None) -> _TaggedEncoder:
        return _TaggedEncoder()


class _TaggedEncoder:
    def __init__(self) -> None:
        self.seen = 0

    def interaction(self, exchange: Exchange) -> str:
        self.seen += 1
        return json.dumps(V1.to_json(Cassette([exchange]))["interactions"][0])

    def pieces(self, source: dict[str, JSON], texts: Iterable[str]) -> Iterator[str]:
        yield '{"version": 3, "tag": "two", "source": ' + json.dumps(source)
        yield ', "interactions": [' + ", ".join(texts) + "]}\n"

    def close(self) -> None:
        pass


def test_a_new_format_is_one_codec_and_one_registry_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(versions.CODECS, 3, _Tagged())
    c = sample()
    out = tmp_path / "three.json"
    with CassetteWriter(out, codec=versions.codec_for(3)) as writer:
        for ex in c.interactions:
            writer.add(ex)
        writer.commit(c.source)
    assert json.loads(out.read_text())["version"] == 3
    assert load(out) == c  # read through the new row
    assert loads(dumps(c)) == c  # the current version is still read by its own codec
    with pytest.raises(CassetteVersionError):
        loads('{"version": 4, "interactions": []}')


# --- the streaming writer ------------------------------------------------------------


@fast
@given(cassettes)
def test_the_writer_streams_the_text_dumps_writes(c: Cassette) -> None:
    c.interactions.sort(key=lambda ex: ex.start_ns)
    assert streamed(c) == dumps(c)


def streamed(c: Cassette) -> str:
    """The text ``CassetteWriter`` writes for ``c``, its interactions added in order."""
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "c.json"
        with CassetteWriter(target) as writer:
            for ex in c.interactions:
                writer.add(ex)
            writer.commit(c.source)
        return target.read_text(encoding="utf-8")


def test_an_empty_writer_writes_the_empty_cassette(tmp_path: Path) -> None:
    with CassetteWriter(tmp_path / "c.json") as writer:
        writer.commit({"command": "build"})
    assert (tmp_path / "c.json").read_text() == dumps(Cassette([], {"command": "build"}))


# --- provenance ----------------------------------------------------------------------


def test_run_source_redacts_the_command_and_names_the_traces() -> None:
    source = run_source(
        ["agent", "--key", "s3cret"], Path("t.jsonl"), lambda s: s.replace("s3cret", "<redacted>")
    )
    assert list(source) == ["recorded_at", "otel_replay", "command", "traces"]
    assert source["command"] == ["agent", "--key", "<redacted>"]
    assert source["traces"] == ["t.jsonl"]
    assert str(source["recorded_at"]).endswith("Z")
    assert list(run_source([], None, str)) == ["recorded_at", "otel_replay"]


def test_build_source_keeps_only_the_chosen_selection() -> None:
    source = build_source([Path("a.jsonl")], 2, {"trace_ids": [], "services": ["svc"]})
    assert source["command"] == "build" and source["traces"] == ["a.jsonl"]
    assert source["skipped"] == 2 and "built_at" in source
    assert source["selection"] == {"services": ["svc"]}
    assert "selection" not in build_source([], 0, {"trace_ids": [], "since_ns": None})


def test_extended_source_keeps_the_loaded_one_and_stamps_the_update() -> None:
    loaded: dict[str, JSON] = {"command": ["agent"]}
    extended = extended_source(loaded, lambda: {"fresh": True})
    assert extended["command"] == ["agent"] and "updated_at" in extended
    assert loaded == {"command": ["agent"]}
    assert extended_source({}, lambda: {"fresh": True})["fresh"] is True
    assert list(default_source(x=1)) == ["otel_replay", "recorded_at", "x"]


# --- the recordings view -------------------------------------------------------------


@fast
@given(exchanges, exchanges)
def test_recordings_give_each_recordings_parts(first: Exchange, second: Exchange) -> None:
    c = Cassette([first])
    view = Recordings(c)
    c.interactions.append(second)  # the view follows its cassette
    assert len(view) == 2 and list(view) == [first, second]
    assert view[1] is second and view.request_body(1) == second.raw_request
    assert view.response(0) is first.response and view.request(1) is second.request
    assert view.requests() == [first.request, second.request]
    with pytest.raises(IndexError):
        view.response(2)


def test_a_session_serves_its_recordings(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    dump(sample(), path)
    session = Session(mode="strict", cassette=path)
    try:
        recorded = sample().interactions[0]
        assert len(session.recordings) == 1
        assert session.recording(0) == recorded
        assert session.recordings.request_body(0) == recorded.raw_request
        assert session.recordings.response(0) == recorded.response
    finally:
        session.discard()
