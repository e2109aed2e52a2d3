"""The egress guard's host list comes from the provider table, and a provider's address
looked up earlier in the process is refused like its name.

No network: the resolvers are replaced by fakes that answer documentation addresses
(203.0.113.0/24) for provider names, and nothing connects to those addresses unless the
guard failed (which the test would then report as a connection error, not a pass).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from otel_replay import providers
from otel_replay.core.errors import EgressBlocked
from otel_replay.frontends import egress
from otel_replay.frontends.egress import (
    PROVIDER_HOSTS,
    egress_blocked,
    is_provider_host,
    resolved_from,
    unwatch_resolutions,
    watch_resolutions,
)

FAKE = {
    "api.openai.com": "203.0.113.7",
    "generativelanguage.googleapis.com": "203.0.113.8",
    "api.groq.com": "127.0.0.1",
}


class FakeResolver:
    """Answers the documentation addresses for provider names and loopback for itself."""

    def __init__(self) -> None:
        self.lookups: list[str] = []
        self.real = socket.getaddrinfo

    def getaddrinfo(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        self.lookups.append(host)
        if host in FAKE:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (FAKE[host], port))]
        return self.real(host, port, *args, **kwargs)

    def gethostbyname(self, host: str) -> str:
        self.lookups.append(host)
        return FAKE[host]

    def gethostbyname_ex(self, host: str) -> tuple[str, list[str], list[str]]:
        self.lookups.append(host)
        return host, [], [FAKE[host]]


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeResolver]:
    fake = FakeResolver()
    monkeypatch.setattr(egress, "_resolved", {})
    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex"):
        monkeypatch.setattr(socket, name, getattr(fake, name))
    yield fake
    unwatch_resolutions()


@pytest.mark.parametrize(
    "host",
    [
        "my-resource.cognitiveservices.azure.com",
        "my-project.services.ai.azure.com",
        "api.x.ai",
        "api.deepseek.com",
        "api.cohere.com",
        "api.fireworks.ai",
        "api.perplexity.ai",
        "generativelanguage.googleapis.com",
        "bedrock-runtime.eu-west-1.amazonaws.com",
    ],
)
def test_every_provider_host_of_the_issue_is_guarded(host: str) -> None:
    assert is_provider_host(host)


def test_the_guard_reads_the_provider_table() -> None:
    assert providers.egress_hosts() == PROVIDER_HOSTS
    declared = {host for row in providers.PROVIDERS for host in row.egress_hosts}
    assert declared <= set(PROVIDER_HOSTS)
    assert "generativelanguage.googleapis.com" in providers.spec("gemini").egress_hosts


def test_an_address_resolved_before_the_guard_is_refused(resolver: FakeResolver) -> None:
    watch_resolutions()
    address = socket.gethostbyname("api.openai.com")
    google = socket.getaddrinfo("generativelanguage.googleapis.com", 443)[0][4][0]
    assert (resolved_from(address), resolved_from(google)) == (
        "api.openai.com",
        "generativelanguage.googleapis.com",
    )
    with egress_blocked():
        with pytest.raises(EgressBlocked, match=r"203\.0\.113\.7 \(resolved from api\.openai"):
            socket.create_connection((address, 443), timeout=1)
        with socket.socket() as sock, pytest.raises(EgressBlocked):
            sock.connect((google, 443))
        with httpx.Client() as client, pytest.raises(EgressBlocked):
            client.get(f"https://{address}/v1/models")
        # a provider name is refused before it is looked up, by every resolver
        before = len(resolver.lookups)
        with pytest.raises(EgressBlocked):
            socket.gethostbyname("api.anthropic.com")
        with pytest.raises(EgressBlocked):
            socket.gethostbyname_ex("api.x.ai")
        assert len(resolver.lookups) == before


def test_an_address_the_gateway_resolved_is_refused_to_the_agent(
    resolver: FakeResolver,
) -> None:
    found: list[str] = []
    with egress_blocked():
        thread = threading.Thread(
            target=lambda: found.append(socket.gethostbyname("api.openai.com")),
            name="otel-replay-gateway-executor_0",
        )
        thread.start()
        thread.join()
        assert found == ["203.0.113.7"]
        with pytest.raises(EgressBlocked):
            socket.create_connection(("203.0.113.7", 443), timeout=1)


def test_loopback_is_never_refused_whatever_resolved_to_it(resolver: FakeResolver) -> None:
    """A provider name pointed at loopback (a hosts-file override towards the gateway)
    leaves loopback reachable."""
    watch_resolutions()
    assert socket.gethostbyname("api.groq.com") == "127.0.0.1"
    assert resolved_from("127.0.0.1") is None
    with socket.create_server(("127.0.0.1", 0)) as server, egress_blocked():
        with socket.create_connection(("127.0.0.1", server.getsockname()[1]), timeout=5):
            pass
    assert resolved_from("203.0.113.99") is None
