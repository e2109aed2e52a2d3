"""The gateway's HTTP port tells OTLP/gRPC (HTTP/2) from HTTP/1 by the first bytes, however
they are split across packets."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator

import pytest

from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.gateway.sniff import PREFACE


@pytest.fixture
def gateway() -> Iterator[GatewayThread]:
    with GatewayThread(GatewayConfig(mode="off", environ=dict(os.environ))) as thread:
        yield thread


def _send_in_pieces(port: int, data: bytes, sizes: list[int]) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    for size in sizes:
        sock.sendall(data[:size])
        data = data[size:]
        time.sleep(0.01)  # separate packets, so the sniffer sees each piece on its own
    sock.sendall(data)
    return sock


def test_http2_preface_in_pieces_reaches_the_grpc_receiver(gateway: GatewayThread) -> None:
    assert gateway.server is not None
    sock = _send_in_pieces(gateway.server.port, PREFACE + bytes(9), [1, 3, 10])
    with sock:
        head = sock.recv(9)
    # the gRPC server's first frame: a SETTINGS frame (type 4 at byte 3)
    assert len(head) == 9 and head[3] == 4


def test_http1_in_pieces_is_answered_by_the_gateway(gateway: GatewayThread) -> None:
    assert gateway.server is not None
    port = gateway.server.port
    host = f"Host: 127.0.0.1:{port}\r\n".encode()
    request = b"GET /v1/models HTTP/1.1\r\n" + host + b"Connection: close\r\n\r\n"
    sock = _send_in_pieces(port, request, [1, 1, 2])
    with sock:
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 ")
    post = b"POST /v1/traces HTTP/1.1\r\n" + host + b"Content-Type: application/x-protobuf"
    post += b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    with _send_in_pieces(port, post, [1, 2]) as sock:  # "P", "OS": not "PRI"
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")


def _https_get(port: int, host: str, cafile: str) -> bytes:
    import ssl

    context = ssl.create_default_context(cafile=cafile)
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    with context.wrap_socket(raw, server_hostname="localhost") as sock:
        sock.sendall(
            f"GET /v1/models HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
        )
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    return answer


def test_tls_on_the_same_port_with_the_gateways_certificate(gateway: GatewayThread) -> None:
    import ssl

    from otel_replay.gateway.local_tls import tls_environment

    assert gateway.server is not None
    port = gateway.server.port
    env = tls_environment({})
    for name in ("127.0.0.1", "localhost"):
        assert _https_get(port, f"{name}:{port}", env["NODE_EXTRA_CA_CERTS"]).startswith(
            b"HTTP/1.1 "
        )
    # the Host check applies over TLS too
    refused = _https_get(port, "attacker.example", env["NODE_EXTRA_CA_CERTS"])
    assert refused.split(b"\r\n")[0] == b"HTTP/1.1 403 Forbidden", refused[:200]
    # the bundle for Python clients keeps what they trusted, and trusts the gateway
    bundle = ssl.create_default_context(cafile=env["SSL_CERT_FILE"])
    assert len(bundle.get_ca_certs()) > 1
    # only certificates are written, never a key
    folder = os.path.dirname(env["NODE_EXTRA_CA_CERTS"])
    for name in os.listdir(folder):
        with open(os.path.join(folder, name)) as file:
            assert "PRIVATE KEY" not in file.read()
    # a client that does not trust it is refused by its own check
    with pytest.raises(ssl.SSLCertVerificationError):
        _https_get(port, f"127.0.0.1:{port}", ssl.get_default_verify_paths().cafile or "")


# a child of `record` reports what it was given, then dials TLS on the gateway's port
# trusting only what its environment says (as a wss:// client started by the run does)
TLS_CHILD = """
import json, os, socket, ssl, sys
port = int(os.environ["OTEL_REPLAY_URL"].rsplit(":", 1)[1])
given = {k: os.environ.get(k) for k in ("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE")}
context = ssl.create_default_context()  # SSL_CERT_FILE, when given, is what it reads
try:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1"):
            handshake = "trusted"
except ssl.SSLError as exc:
    handshake = "refused: " + type(exc).__name__
print(json.dumps({"given": given, "handshake": handshake}))
"""


@pytest.mark.parametrize("asked", [True, False], ids=["--tls", "without"])
def test_the_agent_trusts_the_gateways_tls_only_when_asked(tmp_path, asked: bool) -> None:
    import json
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("OTEL_REPLAY_TLS", "SSL_CERT_FILE")}
    tls = ["--tls"] if asked else []
    command = [sys.executable, "-m", "otel_replay", "record", "--cassette"]
    command += [str(tmp_path / "c.json"), *tls, "--", sys.executable, "-c", TLS_CHILD]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    if asked:
        assert seen["given"]["SSL_CERT_FILE"], seen
        assert seen["given"]["NODE_EXTRA_CA_CERTS"] not in (None, env.get("NODE_EXTRA_CA_CERTS"))
        assert seen["handshake"] == "trusted"
        assert "did not trust" not in done.stderr
    else:
        assert seen["given"] == {  # the caller's own, untouched
            "NODE_EXTRA_CA_CERTS": env.get("NODE_EXTRA_CA_CERTS"),
            "SSL_CERT_FILE": None,
        }
        assert seen["handshake"].startswith("refused")
        # the run says once what to do
        (hint,) = [line for line in done.stderr.splitlines() if "did not trust" in line]
        assert "--tls or OTEL_REPLAY_TLS=1" in hint
