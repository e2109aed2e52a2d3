"""Edge cases a user meets: auto-mode bookkeeping, startup failures, odd inputs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import openai
import pytest
from agents import openai_agent

from otel_replay.cassette.model import load
from otel_replay.core.errors import ConfigError
from otel_replay.gateway.runner import GatewayConfig, GatewayThread, agent_environment
from otel_replay.reports.misses import misses_path
from otel_replay.session.session import Summary
from otel_replay.testing.stub import run_stub

CLI = [sys.executable, "-m", "otel_replay"]
KEY = "sk-own-key-1234567890"


def client(env: dict[str, str], key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key=key, max_retries=0)


def ask(env: dict[str, str], text: str) -> str | None:
    with client(env) as c:
        reply = c.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
    return reply.choices[0].message.content


def test_auto_records_repeated_new_calls_once_each(tmp_path):
    cassette = tmp_path / "c.json"
    with run_stub() as stub:
        config = GatewayConfig(
            mode="auto",
            cassette=cassette,
            upstream_openai=stub.openai_url,
            environ={"OPENAI_API_KEY": KEY},
        )
        with GatewayThread(config) as gw:
            ask(gw.env, "same")
            ask(gw.env, "same")
            summary = gw.stop()
    assert (summary.live, summary.replayed) == (2, 0)
    assert len(load(cassette).interactions) == 2
    with GatewayThread(GatewayConfig(mode="strict", cassette=cassette)) as gw:
        assert ask(gw.env, "same") == ask(gw.env, "same") == "stub reply to: same"
        assert gw.stop().misses == []


def test_auto_does_not_keep_a_network_failure(tmp_path):
    cassette = tmp_path / "c.json"
    with run_stub() as stub:
        config = GatewayConfig(mode="record", cassette=cassette, upstream_openai=stub.openai_url)
        with GatewayThread(config) as gw:
            ask(gw.env, "hello")
    before = cassette.read_text()
    config = GatewayConfig(
        mode="auto",
        cassette=cassette,
        upstream_openai="http://127.0.0.1:9/v1",
        environ={"OPENAI_API_KEY": KEY},
    )
    with GatewayThread(config) as gw, pytest.raises(openai.APIConnectionError):
        ask(gw.env, "something new")
    assert cassette.read_text() == before


def test_a_failed_start_leaves_no_temp_files_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        port = busy.getsockname()[1]
        config = GatewayConfig(mode="record", cassette=tmp_path / "c.json", port=port)
        with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{port}"):
            GatewayThread(config).start()
    finally:
        busy.close()
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(Exception, match=r"bad\.json"):
        GatewayThread(GatewayConfig(mode="auto", cassette=bad)).start()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]


def test_port_in_use_is_one_line_at_the_cli(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = subprocess.run(
            [*CLI, "serve", "--mode", "record", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert out.returncode == 2
    assert "cannot listen on" in out.stderr and "Traceback" not in out.stderr


def test_record_with_a_broken_command_keeps_the_existing_cassette(tmp_path):
    cassette = tmp_path / "c.json"
    with run_stub() as stub:
        config = GatewayConfig(mode="record", cassette=cassette, upstream_openai=stub.openai_url)
        with GatewayThread(config) as gw:
            ask(gw.env, "keep me")
    before = cassette.read_text()
    out = subprocess.run(
        [*CLI, "record", "--cassette", str(cassette), "--", "/no/such/cmd"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 127
    assert cassette.read_text() == before
    assert "nothing was recorded" in out.stderr


def test_build_reads_a_jsonl_file_whose_first_line_is_bad(tmp_path):
    traces = tmp_path / "t.jsonl"
    with run_stub() as stub:
        config = GatewayConfig(
            mode="record",
            cassette=tmp_path / "c.json",
            traces=traces,
            upstream_openai=stub.openai_url,
        )
        with GatewayThread(config) as gw:
            ask(gw.env, "one")
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not json\n" + traces.read_text())
    out = subprocess.run(
        [*CLI, "build", str(broken), "-o", str(tmp_path / "b.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "1 interaction" in out.stderr and "1 bad record skipped" in out.stderr
    nothing = tmp_path / "nothing.jsonl"
    nothing.write_text("not json\n")
    out = subprocess.run(
        [*CLI, "build", str(nothing), "-o", str(tmp_path / "n.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and not (tmp_path / "n.json").exists()


def test_short_password_values_are_redacted(tmp_path, monkeypatch):
    monkeypatch.setenv("DB_PASSWORD", "hunter2")
    with run_stub() as stub:
        config = GatewayConfig(
            mode="record",
            cassette=tmp_path / "c.json",
            traces=tmp_path / "t.jsonl",
            upstream_openai=stub.openai_url,
        )
        with GatewayThread(config) as gw:
            ask(gw.env, "my password is hunter2")
    for path in tmp_path.iterdir():
        assert "hunter2" not in path.read_text(), path


def test_serve_without_a_cassette_never_goes_live_in_ci():
    out = subprocess.run(
        [*CLI, "serve"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "CI": "true"},
    )
    env = json.loads(out.stdout.splitlines()[0])["env"]
    assert env["OTEL_REPLAY_MODE"] == "strict"


def test_each_grpc_signal_gets_its_own_insecure_variable():
    env = agent_environment(
        "http://127.0.0.1:5000", 5001, "strict", {"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc"}
    )
    assert env["OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"] == "http://127.0.0.1:5001"
    assert env["OTEL_EXPORTER_OTLP_METRICS_INSECURE"] == "true"
    assert "OTEL_EXPORTER_OTLP_TRACES_INSECURE" not in env
    assert env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] == "http://127.0.0.1:5000/v1/traces"
    v6 = agent_environment(
        "http://[::1]:5000", 5001, "strict", {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    )
    assert v6["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] == "http://[::1]:5001"


def test_summary_line_counts_in_the_singular():
    summary = Summary(mode="strict", replayed=1, misses=["x"], spans_received=1)
    assert summary.line() == "otel-replay: 1 replayed · 0 live · 1 miss · 1 span received"


def test_stray_paths_are_not_misses_and_a_clean_run_clears_old_misses(tmp_path):
    cassette = tmp_path / "c.json"
    with run_stub() as stub:
        config = GatewayConfig(mode="record", cassette=cassette, upstream_openai=stub.openai_url)
        with GatewayThread(config) as gw:
            ask(gw.env, "hi")
    with GatewayThread(GatewayConfig(mode="strict", cassette=cassette)) as gw:
        with pytest.raises(openai.BadRequestError):
            ask(gw.env, "other")
    assert misses_path(cassette).exists()
    import urllib.error
    import urllib.request

    with GatewayThread(GatewayConfig(mode="strict", cassette=cassette)) as gw:
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(gw.env["OTEL_REPLAY_URL"] + "/healthz", timeout=10)
        assert info.value.code == 404
        info.value.close()
        assert ask(gw.env, "hi") == "stub reply to: hi"
        summary = gw.stop()
    assert summary.misses == [] and summary.replayed == 1
    assert not misses_path(cassette).exists()


def test_openai_agent_still_replays_after_all_that(tmp_path: Path):
    with run_stub() as stub:
        config = GatewayConfig(
            mode="record", cassette=tmp_path / "c.json", upstream_openai=stub.openai_url
        )
        with GatewayThread(config) as gw, client(gw.env) as c:
            recorded = openai_agent(c)
    with GatewayThread(GatewayConfig(mode="strict", cassette=tmp_path / "c.json")) as gw:
        with client(gw.env) as c:
            assert openai_agent(c) == recorded


def test_cli_errors_are_one_line_not_tracebacks(tmp_path):
    with run_stub() as stub:
        config = GatewayConfig(
            mode="record", cassette=tmp_path / "c.json", upstream_openai=stub.openai_url
        )
        with GatewayThread(config) as gw:
            ask(gw.env, "hi")
    unwritable = tmp_path / "file-not-dir"
    unwritable.write_text("")
    report = subprocess.run(
        [
            *CLI,
            "replay",
            "--cassette",
            str(tmp_path / "c.json"),
            "--mode",
            "strict",
            "--report",
            str(unwritable / "r.json"),
            "--",
            sys.executable,
            "-c",
            "pass",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert report.returncode == 2 and "cannot write" in report.stderr
    assert "Traceback" not in report.stderr
    off = subprocess.run(
        [
            *CLI,
            "replay",
            "--cassette",
            str(tmp_path / "c.json"),
            "--mode",
            "off",
            "--",
            "/no/such/cmd",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert off.returncode == 127 and "cannot run" in off.stderr
    request = tmp_path / "r.json"
    request.write_text(json.dumps({"provider": "gemini", "path": "/v1/x", "body": {}}))
    why = subprocess.run(
        [*CLI, "why", "--cassette", str(tmp_path / "c.json"), "--request", str(request)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert why.returncode == 2 and "unknown provider 'gemini'" in why.stderr
    assert "Traceback" not in why.stderr


def test_an_unreadable_request_body_is_a_400_and_nothing_is_recorded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    import logging
    import urllib.error
    import urllib.request

    cassette = tmp_path / "c.json"
    with run_stub() as stub:
        config = GatewayConfig(mode="record", cassette=cassette, upstream_openai=stub.openai_url)
        with caplog.at_level(logging.DEBUG), GatewayThread(config) as gw:
            request = urllib.request.Request(
                gw.env["OPENAI_BASE_URL"] + "/chat/completions",
                data=b"\x1f\x8b\x08\x00corrupt" * 8,
                headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
            )
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(request, timeout=10)
            body = json.loads(info.value.read())
            info.value.close()
            assert ask(gw.env, "hi") == "stub reply to: hi"  # the gateway carries on
            summary = gw.stop()
    assert info.value.code == 400
    message = body["error"]["message"]
    assert message.startswith(
        "otel-replay: unreadable request body: Error -3 while decompressing"
    ), message
    assert summary.live == 1 and len(stub.received) == 1
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_root_cause_names_the_innermost_reason() -> None:
    from otel_replay.core.errors import root_cause

    try:
        try:
            raise ValueError("invalid block type")
        except ValueError as inner:
            raise RuntimeError("") from inner
    except RuntimeError as outer:
        assert root_cause(outer) == "invalid block type"
    try:
        try:
            raise KeyError("unrelated")
        except KeyError:
            raise OSError("disk full") from None
    except OSError as suppressed:
        assert root_cause(suppressed) == "disk full"
    looped = ValueError("")
    looped.__context__ = TypeError("t")
    looped.__context__.__context__ = looped
    assert root_cause(looped) == "t"
