from __future__ import annotations

import gc
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from otel_replay.testing.stub import StubUpstream, run_stub

sys.path.insert(0, str(Path(__file__).parent))

# Property tests draw fresh examples on every run, so a suite run on every change keeps
# looking; counts are sized to what `make test` can afford (15 minutes on two cores), and
# a test that names its own count keeps it.
settings.register_profile("otel-replay", max_examples=40)
settings.load_profile("otel-replay")

# Variables a developer's shell or CI may carry that would change what tests exercise.
_ISOLATED = (
    "CI",
    "OTEL_REPLAY_MODE",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
    "OPENAI_API_VERSION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    # (the plugin points these at the session's gateway; a test starts without them)
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    "OTEL_EXPORTER_OTLP_INSECURE",
    "OTEL_EXPORTER_OTLP_TRACES_INSECURE",
    "OTEL_EXPORTER_OTLP_LOGS_INSECURE",
    "OTEL_EXPORTER_OTLP_METRICS_INSECURE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
)


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _ISOLATED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    # boto3 finds no credentials or region but the test's own, and never asks the network
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture(autouse=True)
def _close_sdk_clients(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Close every SDK client a test made: an unclosed client's sockets are otherwise
    finalised by the GC during some later test, as a ResourceWarning that fails it."""
    import anthropic
    import openai

    created: list[Any] = []
    for cls in (openai.OpenAI, anthropic.Anthropic):
        original = cls.__init__

        def init(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> None:
            _original(self, *args, **kwargs)
            created.append(self)

        monkeypatch.setattr(cls, "__init__", init)
    yield
    for client in created:
        client.close()


@pytest.fixture(autouse=True)
def _collect_before_pytester(request: pytest.FixtureRequest) -> None:
    """An SDK stream whose iteration raised stays suspended until the GC finds it; its
    cleanup touches ``httpx``, which an in-process pytester run may be re-importing at that
    moment. Collect such leftovers before a pytester test starts."""
    if "pytester" in request.fixturenames:
        gc.collect()


@pytest.fixture(autouse=True)
def _cassettes_match_schema(tmp_path: Path) -> Iterator[None]:
    """Every cassette a test writes is checked against schemas/cassette.schema.json."""
    yield
    from schema_check import validate_cassette_file

    for path in tmp_path.rglob("*.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and "interactions" in data and data.get("version") in (1, 2):
            validate_cassette_file(path)


@pytest.fixture
async def stub() -> StubUpstream:
    async with StubUpstream() as upstream:
        yield upstream  # type: ignore[misc]


@pytest.fixture
def stub_thread() -> Iterator[StubUpstream]:
    with run_stub() as upstream:
        yield upstream


def files_text(folder: Path) -> str:
    """Everything written below a folder, as text, for secret checks."""
    chunks = []
    for path in folder.rglob("*"):
        if path.is_file():
            chunks.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(chunks)


os.environ.setdefault("OTEL_SDK_DISABLED", "false")
