"""A real MLflow tracking server to read traces from: ``make backends`` installs it (pinned)
in its own venv, ``.venv/mlflow``, with a database migrated once (the migrations take about
half of a start); it runs here on a free loopback port on a copy of that database, its
artifacts in a temporary folder, background jobs off and nothing else in its environment,
so it writes nowhere else and needs no network; it and the worker it starts stop together."""

from __future__ import annotations

import json
import shutil
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

STARTUP = 240.0  # seconds; the app's imports, on two busy cores


def mlflow_python() -> Path:
    return Path(sys.prefix) / "mlflow" / "bin" / "python"


@contextmanager
def mlflow(directory: Path) -> Iterator[str]:
    """``mlflow server`` serving at the URL yielded until the block ends."""
    python = mlflow_python()
    template = python.parent.parent / "template.db"
    if not template.exists():
        raise RuntimeError(
            f"mlflow is not installed at {python.parent.parent}: run `make backends`"
        )
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, directory / "mlflow.db")
    port = free_port()
    env = {
        "TMPDIR": str(directory),
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "DO_NOT_TRACK": "true",
    }
    argv = [
        str(python), "-m", "mlflow", "server",
        "--backend-store-uri", f"sqlite:///{directory / 'mlflow.db'}",
        "--default-artifact-root", str(directory / "artifacts"),
        "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    ready = partial(answers, f"{url}/health")
    with running(argv, directory, env, ready, startup=STARTUP, log_name="mlflow.log", group=True):
        yield url


def call(url: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """MLflow's REST API: ``GET path``, or ``POST`` of ``body`` as JSON."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url + path, data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def create_experiment(url: str, name: str) -> str:
    return str(call(url, "/api/2.0/mlflow/experiments/create", {"name": name})["experiment_id"])


def wait_for_spans(url: str, trace_id: str, count: int) -> list[dict[str, Any]]:
    """The trace's spans once MLflow has stored ``count`` of them."""
    deadline = time.monotonic() + 60
    spans: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            spans = call(url, f"/api/3.0/mlflow/traces/get?trace_id=tr-{trace_id}")["trace"][
                "spans"
            ]
        except urllib.error.HTTPError as exc:
            exc.close()  # the trace appears with its first span
        if len(spans) >= count:
            return spans
        time.sleep(0.2)
    raise AssertionError(f"MLflow stored {len(spans)} of {count} spans")
