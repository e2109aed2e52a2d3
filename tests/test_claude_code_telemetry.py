"""Claude Code's own telemetry (its OTLP log events with raw API bodies) turned into a
cassette by ``build``, with the real CLI: in file mode the cassette holds the requests as
sent (the same bodies the gateway recorded, ``betas`` back in the header) and replays the
run, in another directory with another HOME too; a build that can read none of the calls
exits 1 saying why and what to set."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from claude_code_runs import CLI, PLAIN, TOOL, TOOL_ARGS, environment, record, replay

from otel_replay.cassette.model import load
from otel_replay.testing.stub import run_stub

TELEMETRY = {
    "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
    "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1",
    "OTEL_LOGS_EXPORTER": "otlp",
}


def build(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "build", *args],
        cwd=cwd,
        env=environment(cwd),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _raw_requests(cassette: Path) -> list[dict]:
    return [ex.raw_request for ex in load(cassette).interactions]


def test_a_cassette_built_from_file_mode_telemetry_replays_the_run(tmp_path):
    folder, home, bodies = tmp_path / "proj", tmp_path / "home", tmp_path / "bodies"
    folder.mkdir()
    (folder / "note.txt").write_text("the answer is 42\n")
    traces = tmp_path / "run.jsonl"
    with run_stub() as stub:
        made = record(
            tmp_path / "gateway.json",
            stub.url,
            folder,
            home,
            "-p",
            TOOL,
            *TOOL_ARGS,
            **TELEMETRY,
            OTEL_LOG_RAW_API_BODIES=f"file:{bodies}",
            traces=traces,
        )
    logs = tmp_path / "run.logs.jsonl"
    assert logs.exists(), made.stderr
    assert sorted(p.name.split(".", 1)[1] for p in bodies.glob("*.json")) == [
        "request.json",
        "request.json",
        "response.json",
        "response.json",
    ]
    # the bodies travel with the traces: build reads them beside the log file
    elsewhere = tmp_path / "copied"
    elsewhere.mkdir()
    shutil.copy(logs, elsewhere)
    for body in bodies.glob("*.json"):
        shutil.copy(body, elsewhere)
    shutil.rmtree(bodies)
    built = build(elsewhere, "run.logs.jsonl", "-o", "built.json")
    assert built.returncode == 0, built.stderr
    assert "2 interactions" in built.stderr
    cassette = elsewhere / "built.json"
    sent = _raw_requests(tmp_path / "gateway.json")
    assert _raw_requests(cassette) == sent  # as sent: betas went as a header
    assert all("betas" not in body and "metadata" in body for body in sent)

    # the directories it was made in come from the requests: it replays in others
    places = json.loads(cassette.read_text("utf-8"))["source"]["rules"]["places"]
    assert places == {"cwd": str(folder), "home": str(home)}
    checkout = tmp_path / "ci" / "checkout"
    checkout.mkdir(parents=True)
    shutil.copy(folder / "note.txt", checkout)
    done = replay(cassette, checkout, tmp_path / "ci-home", "-p", TOOL, *TOOL_ARGS)
    assert done.returncode == 0, done.stderr
    assert "2 replayed · 0 live · 0 misses" in done.stderr
    assert done.stdout == made.stdout

    (elsewhere / "built.json").unlink()
    for body in elsewhere.glob("*.request.json"):
        body.unlink()
    missing = build(elsewhere, "run.logs.jsonl", "-o", "built.json")
    assert missing.returncode == 1
    assert "2 model calls, 0 replayable" in missing.stderr
    assert "body file not found" in missing.stderr
    assert not (elsewhere / "built.json").exists()


def test_a_build_from_truncated_bodies_exits_1_naming_the_setting_that_fixes_it(tmp_path):
    folder, home = tmp_path / "proj", tmp_path / "home"
    prompt = PLAIN + " " + "lorem ipsum " * 1500  # the request is over 60 KB
    with run_stub() as stub:
        record(
            tmp_path / "gateway.json",
            stub.url,
            folder,
            home,
            "-p",
            prompt,
            **TELEMETRY,
            OTEL_LOG_RAW_API_BODIES="1",
            traces=tmp_path / "run.jsonl",
        )
    built = build(tmp_path, "run.logs.jsonl", "-o", "built.json")
    assert built.returncode == 1, built.stderr
    lines = built.stderr.splitlines()
    assert any(
        line.startswith("otel-replay build: claude-code 2.1.332: 1 model call, 0 replayable;")
        and "body_truncated" in line
        and "OTEL_LOG_RAW_API_BODIES=file:DIR" in line
        for line in lines
    ), built.stderr
    assert not (tmp_path / "built.json").exists()
