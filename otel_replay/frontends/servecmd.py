"""``otel-replay serve``: the gateway on its own, driven by JSON lines (the protocol the
TypeScript package speaks).

Standard output: one ``{"env": {...}}`` line once the gateway is ready (a request sent
right after it is answered as a warm one is), and at the end, once standard input ends
or SIGINT/SIGTERM comes, one ``{"summary": {...}}`` line for the cassette in use.

Standard input, one JSON object a line: ``{"use": {"cassette": PATH, "mode": MODE}}``
points the running gateway at another cassette (``mode`` defaults to the serve's own;
``{"use": {}}``: no cassette, strict, a model call then is a miss). The previous
cassette's block is finished as a run's end finishes it (its cassette and misses
written) and the answer is one line ``{"used": {"summary": {...}, "env": {...}}}``: that
block's summary and the environment for the new one (the same port). A cassette or rule
file that cannot be used is answered ``{"error": "…"}`` and changes nothing. The swap is
the pytest plugin's between two blocks (``GatewayThread.use_session``).

With ``OTEL_REPLAY_CONTROL=TOKEN`` in its environment, the gateway also takes the ``use``
line over HTTP from a process that does not hold its standard input (``gateway.control``:
``POST /_otel_replay/use`` with the token), answered by the same code, one line at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otel_replay.core import envvars as ev
from otel_replay.core.errors import ConfigError, OtelReplayError
from otel_replay.core.gcpause import paused_gc
from otel_replay.session.modes import MODES, default_mode

if TYPE_CHECKING:
    from otel_replay.gateway.runner import GatewayConfig, GatewayThread

__all__ = ["PROTOCOL", "serve_command"]

PROTOCOL = (
    'prints {"env": {...}} once ready, and {"summary": {...}} at the end (end of stdin, '
    'SIGINT, SIGTERM); a line {"use": {"cassette": PATH, "mode": MODE}} on stdin switches '
    'cassettes, answered {"used": {"summary": <the previous one\'s>, "env": {...}}}; with '
    "OTEL_REPLAY_CONTROL=TOKEN set, the same line POSTed to /_otel_replay/use with the header "
    "x-otel-replay-token: TOKEN"
)
"""What ``serve --help`` says of the protocol."""


def serve_command(args: argparse.Namespace) -> int:
    # without a cassette there is nothing to replay: record locally, but never go live in CI
    mode = args.mode or (default_mode() if args.cassette else None)
    if mode is None:
        mode = "strict" if default_mode() == "strict" else "record"
    if mode == "off":
        print(json.dumps({"env": {}}), flush=True)
        return 0
    from otel_replay.frontends.runcmd import agent_tls, gateway_config

    config = gateway_config(args, mode, [])
    switch = _Switch(args, mode)
    token = os.environ.pop(ev.OTEL_REPLAY_CONTROL, "")  # never handed on
    if token:
        from otel_replay.gateway.control import Control

        config.control = Control(token, switch.answer, switch.at_once)
    if args.tls:
        from otel_replay.gateway.local_tls import authority

        authority().prepare()  # what the agent trusts for TLS on the gateway's port
    with paused_gc(freeze=True):
        from otel_replay.gateway.runner import GatewayThread

        # the line means ready: a request sent right after it is served as a warm one is
        gateway = GatewayThread(config).start(early=True, ready=True)
    switch.serving(gateway)
    done = threading.Event()
    previous = {s: signal.signal(s, lambda *_: done.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    lock = threading.Lock()  # one line at a time on stdout

    def say(message: dict[str, Any]) -> None:
        with lock:
            print(json.dumps(message), flush=True)

    def watch_stdin() -> None:
        try:
            for line in sys.stdin:
                answer = switch.answer(line)
                if answer is not None:
                    say(answer)
        except (OSError, ValueError):
            return
        done.set()

    say({"env": {**gateway.env, **agent_tls(args)}})
    if sys.stdin is not None and not sys.stdin.closed:
        threading.Thread(target=watch_stdin, daemon=True).start()
    try:
        while not done.wait(0.2):
            pass
    finally:
        summary = gateway.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    say({"summary": summary.to_json()})
    print(summary.line(), file=sys.stderr)
    for message in summary.write_errors:
        print(f"otel-replay: {message}", file=sys.stderr)
    return 1 if summary.write_errors else 0


class _Switch:
    """What answers the ``use`` lines, from standard input and from the control route
    alike: one line at a time, once the gateway serves."""

    def __init__(self, args: argparse.Namespace, mode: str) -> None:
        self.args, self.mode = args, mode
        self._gateway: GatewayThread | None = None
        self._started = threading.Event()
        self._lock = threading.Lock()

    def serving(self, gateway: GatewayThread) -> None:
        self._gateway = gateway
        self._started.set()

    def answer(self, line: str) -> dict[str, Any] | None:
        self._started.wait()  # a control request may come before start() has returned
        assert self._gateway is not None
        with self._lock:
            return _answer(line, self._gateway, self.args, self.mode)

    def at_once(self, line: str) -> dict[str, Any] | None:
        """``answer``, on the gateway's loop (a control request's), when nothing makes it
        wait: the gateway serves, no other line is being answered, and no live call is in
        flight (finishing a block waits for those); else None (``answer`` on a thread)."""
        gateway = self._gateway
        if gateway is None or gateway.server is None or gateway.server.session.in_flight:
            return None
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return _answer(line, gateway, self.args, self.mode)
        finally:
            self._lock.release()


def _answer(
    line: str, gateway: GatewayThread, args: argparse.Namespace, mode: str
) -> dict[str, Any] | None:
    """The answer to one line of standard input (None: not a request, nothing to say)."""
    try:
        message = json.loads(line)
    except ValueError:
        return None if not line.strip() else {"error": "otel-replay: not a JSON line"}
    if not isinstance(message, dict) or "use" not in message:
        return None
    use = message["use"]
    if not isinstance(use, dict):
        return {"error": 'otel-replay: "use" takes an object: {"cassette": PATH, "mode": MODE}'}
    try:
        return {"used": _use(gateway, args, use, mode)}
    except OtelReplayError as exc:
        return {"error": f"otel-replay: {exc}"}


def _use(
    gateway: GatewayThread, args: argparse.Namespace, use: dict[str, Any], mode: str
) -> dict[str, Any]:
    """Point ``gateway`` at the block ``use`` asks for; the previous block's summary and
    the new block's environment."""
    from otel_replay.frontends.runcmd import agent_tls, gateway_config
    from otel_replay.gateway.environment import run_environment
    from otel_replay.gateway.runner import open_session

    cassette = use.get("cassette")
    if cassette is not None and not isinstance(cassette, str):
        raise ConfigError('"cassette" is a path')
    chosen = use.get("mode") or (mode if cassette is not None else "strict")
    if chosen not in MODES or chosen == "off":
        raise ConfigError(f"unknown mode {chosen!r}; use one of strict, auto, record")
    path = cassette and Path(cassette)
    config: GatewayConfig = gateway_config(
        argparse.Namespace(**{**vars(args), "cassette": path}), chosen, []
    )
    server = gateway.server
    assert server is not None
    summary = None
    current = server.session
    if path is not None and current.records and current.cassette_path == path:
        # the block writes the cassette the next one reads: it is written first
        idle = gateway_config(argparse.Namespace(**{**vars(args), "cassette": None}), "strict", [])
        summary = gateway.use_session(open_session(idle)).finish()
    session = open_session(config)  # a bad cassette or rule file: nothing is swapped
    previous = gateway.use_session(session)
    summary = summary or previous.finish()
    env = run_environment(config, session, server.port, server.grpc_port)
    env.update(agent_tls(args))
    return {"summary": summary.to_json(), "env": env}
