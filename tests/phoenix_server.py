"""A real Arize Phoenix to read from: ``make backends`` installs it (pinned) in its own
venv, ``.venv/phoenix``; it runs here on free loopback ports with its working directory
(SQLite database and all) in a temporary folder, telemetry off and nothing else in its
environment, so it writes nowhere else and needs no network."""

from __future__ import annotations

import json
import signal
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from processes import answers, free_port, running

STARTUP = 240.0  # seconds; migrations on a busy two-core machine take most of a minute


def phoenix_python() -> Path:
    return Path(sys.prefix) / "phoenix" / "bin" / "python"


@contextmanager
def phoenix(directory: Path) -> Iterator[str]:
    """Phoenix serving at the URL yielded until the block ends."""
    python = phoenix_python()
    if not python.exists():
        raise RuntimeError(f"arize-phoenix is not installed at {python}: run `make backends`")
    port = free_port()
    env = {
        "TMPDIR": str(directory),
        "PHOENIX_WORKING_DIR": str(directory / "phoenix"),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    url = f"http://127.0.0.1:{port}"
    argv = [str(python), "-m", "phoenix.server.main", "serve"]
    ready = partial(answers, f"{url}/v1/projects")
    with running(
        argv, directory, env, ready, startup=STARTUP, stop=signal.SIGINT, log_name="phoenix.log"
    ):
        yield url


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
