"""A real Arize Phoenix to read from: ``make backends`` installs it (pinned) in its own
venv, ``.venv/phoenix``; it runs here on free loopback ports with its working directory
(SQLite database and all) in a temporary folder, telemetry off and nothing else in its
environment, so it writes nowhere else and needs no network."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

STARTUP = 240.0  # seconds; migrations on a busy two-core machine take most of a minute


def phoenix_python() -> Path:
    return Path(sys.prefix) / "phoenix" / "bin" / "python"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def phoenix(directory: Path) -> Iterator[str]:
    """Phoenix serving at the URL yielded until the block ends."""
    python = phoenix_python()
    if not python.exists():
        raise RuntimeError(f"arize-phoenix is not installed at {python}: run `make backends`")
    port = _free_port()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(directory),
        "TMPDIR": str(directory),
        "PHOENIX_WORKING_DIR": str(directory / "phoenix"),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (directory / "phoenix.log").open("wb")
    server = subprocess.Popen(
        [str(python), "-m", "phoenix.server.main", "serve"],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=directory,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(server, url, directory / "phoenix.log")
        yield url
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _wait(server: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"Phoenix exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            get(f"{url}/v1/projects")
            return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    raise RuntimeError(f"Phoenix did not start in {STARTUP:.0f} s")


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def wait_for_spans(url: str, project: str, count: int) -> list[dict[str, Any]]:
    """The project's spans once Phoenix has stored ``count`` (it ingests in batches)."""
    deadline = time.monotonic() + 60
    spans: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            spans = get(f"{url}/v1/projects/{project}/spans?limit=1000")["data"]
        except urllib.error.HTTPError as exc:
            exc.close()  # the project appears with its first span
        if len(spans) >= count:
            return spans
        time.sleep(0.2)
    raise AssertionError(f"Phoenix stored {len(spans)} of {count} spans")
