"""The Python API: ``record`` and ``replay`` blocks around an unmodified SDK agent."""

from __future__ import annotations

import os
from pathlib import Path

import openai
import pytest
from agents import openai_agent

from otel_replay import ReplayMiss, record, replay
from otel_replay.core.errors import ConfigError
from otel_replay.testing.stub import StubUpstream


@pytest.fixture
def cassette(tmp_path: Path, stub_thread: StubUpstream, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "weather.json"
    with monkeypatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "sk-test-api-0000")
        with record(path, upstream_openai=stub_thread.openai_url) as gw:
            with openai.OpenAI(max_retries=0) as client:
                assert openai_agent(client) == "stub reply to: sunny in Lisbon"
    assert gw.summary is not None and gw.summary.live == 2
    assert len(stub_thread.received) == 2
    return path


def test_replay_answers_from_the_cassette_and_restores_the_environment(
    cassette: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://example.invalid/v1")
    before = dict(os.environ)
    with replay(cassette, mode="strict") as gw:
        assert os.environ["OPENAI_BASE_URL"] == f"{gw.url}/v1"
        assert os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] == gw.url
        assert gw.env["OPENAI_BASE_URL"] == os.environ["OPENAI_BASE_URL"]
        with openai.OpenAI(max_retries=0) as client:
            assert openai_agent(client, stream=True) == "stub reply to: sunny in Lisbon"
    assert dict(os.environ) == before
    assert gw.summary is not None
    assert (gw.summary.replayed, gw.summary.live, gw.summary.misses) == (2, 0, [])


def test_a_swallowed_miss_still_raises(cassette: Path) -> None:
    with pytest.raises(ReplayMiss, match=r"replay miss: messages changed \(hash \w+→\w+\)"):
        with replay(cassette, mode="strict"):
            with openai.OpenAI(max_retries=0) as client:
                try:
                    openai_agent(client, city="Oslo")
                except openai.BadRequestError:
                    pass
    assert "OPENAI_BASE_URL" not in os.environ


def test_an_agent_error_from_a_miss_is_reported_as_the_miss(cassette: Path) -> None:
    with pytest.raises(ReplayMiss) as caught:
        with replay(cassette, mode="strict"):
            with openai.OpenAI(max_retries=0) as client:
                openai_agent(client, system_extra=" Be brief.")
    assert "system prompt changed" in str(caught.value)
    assert isinstance(caught.value.__cause__, openai.BadRequestError)


def test_other_errors_pass_through(cassette: Path) -> None:
    with pytest.raises(ZeroDivisionError), replay(cassette, mode="strict"):
        1 / 0  # noqa: B018


def test_mode_off_starts_nothing(cassette: Path) -> None:
    before = dict(os.environ)
    with replay(cassette, mode="off") as gw:
        assert dict(os.environ) == before
    assert gw.env == {} and gw.url == ""


def test_bad_arguments_are_config_errors(cassette: Path) -> None:
    with pytest.raises(ConfigError, match="unknown mode"), replay(cassette, mode="fast"):
        pass
    with pytest.raises(ConfigError, match="timing"), replay(cassette, timing="slow"):
        pass
