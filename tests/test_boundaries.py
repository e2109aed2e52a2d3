"""Boundaries: loopback by default, strict never dials out, auto forwards only with the
gateway's own key, and plugin cassette names stay inside their folder."""

from __future__ import annotations

import socket
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.testing.stub import run_stub

pytest_plugins = ["pytester"]

KEY = "sk-test-boundary-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-api03-" + "b" * 90


class CountingListener:
    """A TCP listener that counts accepted connections and closes them at once."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            conn.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[CountingListener]:
    counting = CountingListener()
    yield counting
    counting.close()


def _listening_addresses(port: int) -> set[str]:
    """Local addresses of the sockets listening on ``port``, from /proc/net/tcp{,6}."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:
                raw = bytes.fromhex(address)
                if len(raw) == 4:
                    found.add(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                else:
                    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                    found.add(socket.inet_ntop(socket.AF_INET6, words))
    return found


def test_gateway_binds_loopback_by_default(tmp_path: Path) -> None:
    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs /proc/net/tcp")
    assert GatewayConfig(mode="record").host == "127.0.0.1"
    with GatewayThread(GatewayConfig(mode="record", cassette=tmp_path / "c.json")) as gw:
        assert gw.server is not None and gw.server.grpc_port
        for port in (gw.server.port, gw.server.grpc_port):
            addresses = _listening_addresses(port)
            assert addresses, port
            assert addresses <= {"127.0.0.1", "::1", "::ffff:127.0.0.1"}, addresses
        for value in gw.env.values():
            if value.startswith("http://"):
                assert value.startswith("http://127.0.0.1:"), value


@pytest.fixture(scope="module")
def cassette(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("boundaries") / "c.json"
    with (
        run_stub() as stub,
        GatewayThread(
            GatewayConfig(
                mode="record",
                cassette=path,
                grpc_port=None,
                upstream_openai=stub.openai_url,
                upstream_anthropic=stub.anthropic_url,
                environ={},
            )
        ) as gw,
    ):
        _openai(gw.env, KEY, "recorded")
        _anthropic(gw.env, ANTHROPIC_KEY, "recorded")
    return path


def _openai(env: dict[str, str], key: str, text: str) -> Any:
    client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key=key, max_retries=0, timeout=5)
    try:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": text}]
        )
        return reply.choices[0].message.content
    except openai.APIError as exc:
        return type(exc)


def _anthropic(env: dict[str, str], key: str, text: str) -> Any:
    client = anthropic.Anthropic(
        base_url=env["ANTHROPIC_BASE_URL"], api_key=key, max_retries=0, timeout=5
    )
    try:
        reply = client.messages.create(
            model="claude-haiku-4-5", max_tokens=32, messages=[{"role": "user", "content": text}]
        )
        return reply.content[0].text  # type: ignore[union-attr]
    except anthropic.APIError as exc:
        return type(exc)


def test_strict_never_opens_an_upstream_connection(
    cassette: Path, listener: CountingListener
) -> None:
    config = GatewayConfig(
        mode="strict",
        cassette=cassette,
        grpc_port=None,
        upstream_openai=listener.url + "/v1",
        upstream_anthropic=listener.url,
        environ={"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY},
    )
    with GatewayThread(config) as gw:
        assert _openai(gw.env, KEY, "recorded") == "stub reply to: recorded"
        assert _anthropic(gw.env, ANTHROPIC_KEY, "recorded") == "stub reply to: recorded"
        assert _openai(gw.env, KEY, "never recorded") is openai.BadRequestError
        assert _openai(gw.env, KEY, "recorded") is openai.BadRequestError  # used up
        assert _anthropic(gw.env, ANTHROPIC_KEY, "never") is anthropic.BadRequestError
        client = openai.OpenAI(
            base_url=gw.env["OPENAI_BASE_URL"], api_key=KEY, max_retries=0, timeout=5
        )
        for call in (
            lambda: client.models.list(),
            lambda: client.embeddings.create(model="e", input="x"),
            lambda: client.responses.create(model="gpt-4o-mini", input="x"),
        ):
            try:
                call()
            except openai.APIError:
                pass
        summary = gw.stop()
    assert summary.live == 0
    assert listener.accepted == 0
    # the listener does count: record mode reaches it at once
    with GatewayThread(
        GatewayConfig(
            mode="record",
            cassette=None,
            grpc_port=None,
            upstream_openai=listener.url + "/v1",
            environ={},
        )
    ) as gw:
        assert _openai(gw.env, KEY, "x") is openai.APIConnectionError
    # (a connection opened ahead at start, which it closes, and then the call's, unless
    # the call met that one first)
    assert listener.accepted >= 1


@pytest.mark.parametrize(
    ("offered", "forwarded"),
    [
        (KEY, True),
        (KEY + "x", False),
        (KEY[:-1], False),
        ("sk-other-key-000000000000", False),
        ("otel-replay-no-key", False),
        (KEY.upper(), False),
    ],
    ids=["exact", "longer", "shorter", "other", "placeholder", "case"],
)
def test_auto_forwards_only_with_the_gateways_exact_key(
    tmp_path: Path, offered: str, forwarded: bool
) -> None:
    with run_stub() as stub:
        config = GatewayConfig(
            mode="auto",
            cassette=tmp_path / "c.json",
            grpc_port=None,
            upstream_openai=stub.openai_url,
            upstream_anthropic=stub.anthropic_url,
            environ={"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY},
        )
        with GatewayThread(config) as gw:
            answer = _openai(gw.env, offered, "new question")
            other = _anthropic(gw.env, offered.replace(KEY, ANTHROPIC_KEY), "new question")
            summary = gw.stop()
        sent = len(stub.received)
    if forwarded:
        assert answer == other == "stub reply to: new question"
        assert sent == 2 and summary.live == 2
    else:
        assert answer is openai.BadRequestError and other is anthropic.BadRequestError
        assert sent == 0 and summary.live == 0 and len(summary.misses) == 2


@pytest.mark.parametrize(
    "environ",
    [{}, {"OPENAI_API_KEY": "otel-replay-no-key"}],
    ids=["no-key", "placeholder-key"],  # a run inside another run has the placeholder
)
def test_auto_with_no_key_in_its_environment_never_forwards(
    tmp_path: Path, environ: dict[str, str]
) -> None:
    with run_stub() as stub:
        config = GatewayConfig(
            mode="auto",
            cassette=tmp_path / "c.json",
            grpc_port=None,
            upstream_openai=stub.openai_url,
            environ=environ,
        )
        with GatewayThread(config) as gw:
            for key in ("no-key", "otel-replay-no-key", KEY):
                assert _openai(gw.env, key, "q") is openai.BadRequestError
        assert stub.received == []


def test_openai_request_with_an_extra_x_api_key_header_goes_to_openai(
    cassette: Path, listener: CountingListener
) -> None:
    """An OpenAI client behind a proxy that wants its own ``x-api-key`` header."""
    with (
        run_stub() as stub,
        GatewayThread(
            GatewayConfig(
                mode="record",
                cassette=None,
                grpc_port=None,
                upstream_openai=stub.openai_url,
                upstream_anthropic=listener.url,
                environ={},
            )
        ) as gw,
    ):
        client = openai.OpenAI(
            base_url=gw.env["OPENAI_BASE_URL"],
            api_key=KEY,
            max_retries=0,
            timeout=5,
            default_headers={"x-api-key": "proxy-credential"},
        )
        # the connection a recording opens ahead to each named upstream carries no request
        assert gw.server is not None and gw.server._ahead is not None
        for _ in range(500):
            if gw.server._ahead.done():
                break
            time.sleep(0.01)
        opened_ahead = listener.accepted
        try:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
            )
            answer: Any = reply.choices[0].message.content
        except openai.APIError as exc:
            answer = type(exc)
    assert listener.accepted == opened_ahead <= 1
    assert answer == "stub reply to: hi"


# --- pytest plugin: cassette names cannot escape their folder ---------------------------

ESCAPING = textwrap.dedent(
    """
    import pytest

    @pytest.mark.parametrize("name", ["../../escaped", "../escaped", "cassettes/../../escaped"])
    def test_escape(otel_replay, name):
        with otel_replay(name):
            pass
    """
)


def test_plugin_refuses_cassette_names_that_escape_their_folder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    tests = pytester.path / "a" / "b" / "suite" / "tests"
    tests.mkdir(parents=True)
    (tests / "test_escape.py").write_text(ESCAPING)
    # run from deep inside the sandbox so that whatever escapes still lands in it
    monkeypatch.chdir(tests)
    result = pytester.runpytest_inprocess(
        "-p", "no:hypothesispytest", "--otel-replay=record", str(tests)
    )
    outside = [p for p in pytester.path.rglob("escaped*") if "cassettes" not in p.parent.name]
    assert result.parseoutcomes().get("failed", 0) == 3
    assert outside == []
    result.stdout.fnmatch_lines(["*escape*cassette*folder*"])
