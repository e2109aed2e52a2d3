"""The commands that run the gateway around the agent's command: ``record`` and ``replay``
(``serve``, the gateway on its own, is ``servecmd``), and the gateway's settings from the
command line.

The gateway is built on its own thread while the agent starts (``GatewayThread.start(early=
True)``), with the cyclic garbage collector paused meanwhile (see ``frontends.cli``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from otel_replay.core.gcpause import paused_gc
from otel_replay.frontends.forkopts import fork_plan
from otel_replay.session.modes import default_mode

if TYPE_CHECKING:
    from otel_replay.gateway.runner import GatewayConfig
    from otel_replay.session.fork import ForkPlan

__all__ = ["gateway_config", "run_command"]


def gateway_config(
    args: argparse.Namespace, mode: str, command: list[str], fork: ForkPlan | None = None
) -> GatewayConfig:
    from otel_replay.frontends.rulefiles import rule_sources
    from otel_replay.gateway.runner import GatewayConfig
    from otel_replay.providers import PROVIDERS

    upstreams: dict[str, str | None] = {
        row.name: getattr(args, f"upstream_{row.name.replace('-', '_')}", None) for row in PROVIDERS
    }
    upstreams.update(args.upstream)
    return GatewayConfig(
        mode=mode,
        cassette=args.cassette,
        traces=args.traces,
        upstreams=upstreams,
        host=args.host,
        port=getattr(args, "port", 0),
        grpc_port=getattr(args, "grpc_port", 0),
        timing=getattr(args, "timing", "fast"),
        report=args.report,
        command=command,
        rules=rule_sources(args.cassette, args.rules),
        fork=fork,
        mcp=dict(args.mcp),
        tools=args.tools,
    )


def agent_tls(args: argparse.Namespace) -> dict[str, str]:
    """With ``--tls``, the variables that have the agent trust the gateway's TLS."""
    if not getattr(args, "tls", False):
        return {}
    from otel_replay.gateway.local_tls import tls_environment

    return tls_environment(os.environ)


def run_command(args: argparse.Namespace, command: list[str]) -> int:
    mode = "record" if args.command == "record" else (args.mode or default_mode())
    fork = fork_plan(args) if args.command == "replay" else None
    if fork is not None:
        mode = "strict"  # up to the fork point; live from it
    if mode == "off":
        return _child(command, dict(os.environ))
    if args.tls:
        from otel_replay.gateway.local_tls import authority

        authority().prepare()  # what the agent trusts for TLS on the gateway's port
    with paused_gc(freeze=True):  # the cassette lives as long as the run
        from otel_replay.gateway.runner import GatewayThread

        gateway = GatewayThread(gateway_config(args, mode, command, fork)).start(early=True)
    from otel_replay.gateway.agents import agent_command

    try:
        env = {**gateway.env, **agent_tls(args)}
        # an agent that reads no base-URL variable gets the gateway's on its command line
        code = _child(agent_command(command, env), {**os.environ, **env})
    finally:
        summary = gateway.stop()
    print(summary.line(), file=sys.stderr)
    for message in [*summary.write_errors, *summary.misses]:
        print(f"otel-replay: {message}", file=sys.stderr)
    for bypass in summary.bypassed:
        print(f"otel-replay: bypassed the gateway: {bypass}", file=sys.stderr)
    if summary.misses and args.cassette is not None:
        if summary.replayed == 0 and not Path(args.cassette).exists():
            print(
                f"otel-replay: {args.cassette} does not exist yet; record it with "
                f"`otel-replay record --cassette {args.cassette} -- ...`",
                file=sys.stderr,
            )
        else:
            print(f"otel-replay: see `otel-replay why --cassette {args.cassette}`", file=sys.stderr)
    if code:
        return code
    return 1 if summary.failed else 0


def _child(command: list[str], env: dict[str, str]) -> int:
    """Run the agent; forward SIGINT/SIGTERM to it and return its exit code."""
    import subprocess

    try:
        child = subprocess.Popen(command, env=env)
    except OSError as exc:
        print(f"otel-replay: cannot run {command[0]!r}: {exc}", file=sys.stderr)
        return 127

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - code if code < 0 else code
