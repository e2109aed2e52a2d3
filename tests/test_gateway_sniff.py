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
