"""Servers the tests start as processes of their own: on free loopback ports, with their
working directory (and home) in a temporary folder and nothing else of this environment
but PATH, their output in a log there; they always stop when the block ends."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running(
    argv: list[str],
    directory: Path,
    env: dict[str, str],
    ready: Callable[[], bool],
    *,
    startup: float = 60.0,
    stop: signal.Signals = signal.SIGTERM,
    log_name: str | None = None,
    group: bool = False,
) -> Iterator[Path]:
    """``argv`` in ``directory`` with only ``env`` (PATH and HOME besides), until
    ``ready()`` is true (``startup`` seconds at the most); yields its log. Stopped by
    ``stop`` (then SIGKILL after 30 s) when the block ends; with ``group``, in a process
    group of its own, stopped whole (for a server that starts workers of its own)."""
    directory.mkdir(parents=True, exist_ok=True)
    log_path = directory / (log_name or f"{Path(argv[0]).name}.log")
    log = log_path.open("ab")
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=directory,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(directory), **env},
        start_new_session=group,
    )

    def signal_all(signum: signal.Signals) -> None:
        if not group:
            process.send_signal(signum)
            return
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            pass

    try:
        deadline = time.monotonic() + startup
        while not ready():
            if process.poll() is not None:
                text = log_path.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{argv[0]} exited ({process.returncode}): {text}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{argv[0]} did not start in {startup:.0f} s")
            time.sleep(0.05)
        yield log_path
    finally:
        signal_all(stop)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            signal_all(signal.SIGKILL)
            process.wait()
        log.close()


def answers(url: str) -> bool:
    """``url`` answers 200."""
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False
