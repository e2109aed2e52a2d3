"""The real Claude Code CLI on Google Cloud's Vertex AI (``CLAUDE_CODE_USE_VERTEX``) and on
AWS Bedrock (``CLAUDE_CODE_USE_BEDROCK``): recorded through ``otel-replay record`` against
the stub upstream, then replayed strictly with the stub stopped, in another folder and
HOME, with no cloud account, project, region or credentials named — every call hits; a
changed prompt misses."""

from __future__ import annotations

from pathlib import Path

import pytest
from claude_code_runs import PLAIN, otel_replay

from otel_replay.testing.stub import run_stub

CLOUDS = {
    "vertex": (
        {"CLAUDE_CODE_USE_VERTEX": "1"},
        {
            "CLOUD_ML_REGION": "us-east5",
            "ANTHROPIC_VERTEX_PROJECT_ID": "rec-project",
            "CLAUDE_CODE_SKIP_VERTEX_AUTH": "1",  # Claude Code's setting for a gateway
        },
        ["--upstream-vertex-anthropic", "{stub}/v1"],
        (
            "/v1/projects/rec-project/locations/us-east5/publishers/anthropic/models/",
            ":streamRawPredict",
        ),
    ),
    "bedrock": (
        {"CLAUDE_CODE_USE_BEDROCK": "1"},
        {
            "AWS_REGION": "us-west-2",
            "CLAUDE_CODE_SKIP_BEDROCK_AUTH": "1",  # the gateway signs the live call itself
            "AWS_ACCESS_KEY_ID": "AKIAGATEWAYGATEWAY42",  # ... with these
            "AWS_SECRET_ACCESS_KEY": "gatewaySecretGatewaySecretGatewaySecr02",
        },
        ["--upstream-bedrock", "{stub}"],
        ("/model/", "/invoke-with-response-stream"),
    ),
}


@pytest.mark.parametrize("cloud", sorted(CLOUDS))
def test_claude_code_on_a_cloud_records_and_replays_in_another_folder_and_home(
    tmp_path: Path, cloud: str
) -> None:
    on, account, upstream, (starts, ends) = CLOUDS[cloud]
    cassette = tmp_path / "c.json"
    with run_stub() as stub:
        args = ["record", "--cassette", str(cassette)]
        args += [arg.format(stub=stub.url) for arg in upstream]
        first = otel_replay(
            args, tmp_path / "a" / "proj", tmp_path / "a", "-p", PLAIN, **on, **account
        )
        paths = [r.path for r in stub.received]
    assert first.returncode == 0, first.stderr
    assert len(paths) == 1 and paths[0].startswith(starts) and paths[0].endswith(ends), paths
    assert "AKIAGATEWAYGATEWAY42" not in cassette.read_text()
    strict = ["replay", "--cassette", str(cassette), "--mode", "strict"]
    again = otel_replay(strict, tmp_path / "b" / "work", tmp_path / "b", "-p", PLAIN, **on)
    assert again.returncode == 0, again.stderr
    assert "otel-replay: 1 replayed · 0 live · 0 misses" in again.stderr
    assert again.stdout == first.stdout
    prompt = "say hello stub:text"
    changed = otel_replay(strict, tmp_path / "c" / "work", tmp_path / "c", "-p", prompt, **on)
    assert changed.returncode == 1, changed.stderr
    assert "replay miss: messages changed (hash " in changed.stderr
