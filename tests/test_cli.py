"""The command line as a user runs it: subprocesses, exit codes, the summary line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from otel_replay.testing.stub import run_stub

AGENT = [sys.executable, str(Path(__file__).parent / "agents.py")]
CLI = [sys.executable, "-m", "otel_replay"]


def run(args: list[str], env: dict[str, str] | None = None, **kw):  # type: ignore[no-untyped-def]
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        **kw,
    )


def test_record_then_replay_with_upstream_down(tmp_path):
    cassette, traces = tmp_path / "c.json", tmp_path / "t.jsonl"
    with run_stub() as stub:
        rec = run(
            [
                "record",
                "--cassette",
                str(cassette),
                "--traces",
                str(traces),
                "--upstream-openai",
                stub.openai_url,
                "--",
                *AGENT,
                "openai",
                "stream",
            ],
            {"OPENAI_API_KEY": "sk-test-1234567890"},
        )
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.strip() == "stub reply to: sunny in Lisbon"
    assert "otel-replay: 0 replayed · 2 live · 0 misses · 0 spans received" in rec.stderr
    rep = run(
        [
            "replay",
            "--cassette",
            str(cassette),
            "--mode",
            "strict",
            "--",
            *AGENT,
            "openai",
            "stream",
        ]
    )
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert "otel-replay: 2 replayed · 0 live · 0 misses · 0 spans received" in rep.stderr


def test_replay_miss_exits_1_and_names_the_component(tmp_path):
    cassette = tmp_path / "c.json"
    with run_stub() as stub:
        rec = run(
            [
                "record",
                "--cassette",
                str(cassette),
                "--upstream-anthropic",
                stub.anthropic_url,
                "--",
                *AGENT,
                "anthropic",
            ],
            {"ANTHROPIC_API_KEY": "sk-ant-api03-" + "k" * 90},
        )
    assert rec.returncode == 0, rec.stderr
    rep = run(
        ["replay", "--cassette", str(cassette), "--", *AGENT, "anthropic", "Oslo"], {"CI": "true"}
    )
    assert rep.returncode == 1
    assert "replay miss: messages changed (hash " in rep.stderr
    assert "1 miss" in rep.stderr
    why = run(["why", "--cassette", str(cassette)])
    assert why.returncode == 0 and "Oslo" in why.stdout


def test_replay_passes_through_the_commands_exit_code(tmp_path):
    cassette = tmp_path / "c.json"
    with run_stub() as stub:
        rec = run(
            [
                "record",
                "--cassette",
                str(cassette),
                "--upstream-openai",
                stub.openai_url,
                "--",
                *AGENT,
                "openai",
            ],
            {"OPENAI_API_KEY": "sk-test"},
        )
    assert rec.returncode == 0, rec.stderr
    rep = run(
        [
            "replay",
            "--cassette",
            str(cassette),
            "--mode",
            "strict",
            "--",
            sys.executable,
            "-c",
            "raise SystemExit(7)",
        ]
    )
    assert rep.returncode == 7


def serve(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "serve", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
    )


def test_serve_prints_env_then_summary_on_eof(tmp_path):
    with (
        run_stub() as stub,
        serve(
            [
                "--cassette",
                str(tmp_path / "c.json"),
                "--mode",
                "record",
                "--upstream-openai",
                stub.openai_url,
            ]
        ) as proc,
    ):
        assert proc.stdout is not None and proc.stdin is not None
        env = json.loads(proc.stdout.readline())["env"]
        assert env["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")
        assert env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].endswith("/v1/traces")
        agent = subprocess.run(
            [*AGENT, "openai"],
            env={**os.environ, **env, "OPENAI_API_KEY": "sk-test"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert agent.returncode == 0, agent.stderr
        proc.stdin.close()
        summary = json.loads(proc.stdout.readline())["summary"]
        assert proc.wait(30) == 0
    assert summary["live"] == 2
    assert json.loads((tmp_path / "c.json").read_text())["interactions"]


def test_serve_stops_on_sigterm_with_a_summary(tmp_path):
    import signal

    with serve(["--mode", "record"]) as proc:
        assert proc.stdout is not None
        json.loads(proc.stdout.readline())
        proc.send_signal(signal.SIGTERM)
        summary = json.loads(proc.stdout.readline())["summary"]
        assert proc.wait(30) == 0
    assert summary["live"] == 0


def test_grpc_protocol_points_the_agent_at_the_grpc_port():
    with serve(["--mode", "record"], {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        env = json.loads(proc.stdout.readline())["env"]
        proc.stdin.close()
        proc.wait(30)
    port = env["OTEL_REPLAY_GRPC_PORT"]
    assert env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] == f"http://127.0.0.1:{port}"
    assert env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] == "grpc"


def test_bad_cassette_is_one_line_error(tmp_path):
    bad = tmp_path / "c.json"
    bad.write_text('{"version": 1, "interactions": [')
    rep = run(["replay", "--cassette", str(bad), "--", sys.executable, "-c", "pass"])
    assert rep.returncode == 2
    assert str(bad) in rep.stderr and "Traceback" not in rep.stderr


def test_demo_runs(tmp_path):
    demo = run(["demo"], cwd=tmp_path)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "demo passed" in demo.stdout
    assert "replay miss: " in demo.stdout
