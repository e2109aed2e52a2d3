"""The ``otel-replay`` command line (also ``python -m otel_replay``).

Each command imports what it needs when it runs: parsing the arguments needs only the
provider table. ``record`` and ``replay`` start the agent as soon as the cassette is
loaded and the ports are bound; the gateway is built while the agent starts. ``serve``
prints the agent's environment once the gateway is ready for a first request. The cyclic
garbage collector waits until then: what start-up makes (modules, the provider table,
the cassette) lives as long as the run, so a collection during it would only walk those
objects again and again.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from otel_replay.core.envvars import OTEL_REPLAY_TLS
from otel_replay.core.errors import OtelReplayError
from otel_replay.core.gcpause import paused_gc
from otel_replay.frontends.forkopts import add_fork_options
from otel_replay.frontends.runcmd import run_command
from otel_replay.frontends.servecmd import PROTOCOL, serve_command
from otel_replay.gateway.tls import defer_bundles
from otel_replay.session.modes import MODES

if TYPE_CHECKING:
    pass

_USAGE_CMD = "-- CMD... (the agent command to run, after --)"


def _split_command(argv: list[str]) -> tuple[list[str], list[str]]:
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, []


def _gateway_options(parser: argparse.ArgumentParser) -> None:
    from otel_replay.providers import PROVIDERS
    from otel_replay.providers.named import parse_upstream

    parser.add_argument("--traces", type=Path, help="OTLP JSON lines file for all telemetry")
    for row in PROVIDERS:
        if row.option_help is not None:
            parser.add_argument(f"--upstream-{row.name}", metavar="URL", help=row.option_help)
    parser.add_argument(
        "--upstream",
        action="append",
        default=[],
        type=parse_upstream,
        metavar="NAME=URL",
        help="an OpenAI-compatible upstream the agent reaches at /u/NAME/v1 (NAME_BASE_URL); "
        "repeatable",
    )
    parser.add_argument(
        "--report", type=Path, metavar="FILE", help="write a run report (.json, .html, .md)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default loopback)")
    parser.add_argument(
        "--mcp",
        action="append",
        default=[],
        type=_mcp_server,
        metavar="NAME=URL",
        help="an MCP server (Streamable HTTP at URL) the agent reaches at /mcp/NAME "
        "(OTEL_REPLAY_MCP_<NAME>_URL); repeatable",
    )
    parser.add_argument(
        "--tools",
        choices=("replay", "live"),
        default="replay",
        help="the agent's own tools (functions of pydantic-ai, openai-agents, LangChain, "
        "LlamaIndex, @otel_replay.tool): recorded and replayed (default), or run live",
    )
    parser.add_argument(
        "--tls",
        action="store_true",
        default=os.environ.get(OTEL_REPLAY_TLS) == "1",
        help="give the agent NODE_EXTRA_CA_CERTS and SSL_CERT_FILE trusting the gateway's "
        "certificate, for clients that dial only wss:// (Node's OpenAIRealtimeWS, "
        "google-genai's Live API); OTEL_REPLAY_TLS=1",
    )
    _rules_option(parser)


def _mcp_server(text: str) -> tuple[str, str]:
    from otel_replay.providers.mcp import parse_server  # imported when --mcp is given

    return parse_server(text)


def _rules_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rules",
        type=Path,
        metavar="FILE",
        help="a rule file, above otel-replay.toml (cwd or beside the cassette)",
    )


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``command`` (a command's name), only that command's
    (building every command's costs ~20 ms, which a run would pay before its agent starts;
    a name that is no command gets the whole parser, which lists them)."""
    parser = argparse.ArgumentParser(
        prog="otel-replay",
        description="Record LLM agent traffic as OpenTelemetry spans; replay it offline.",
    )
    from otel_replay._version import __version__

    parser.add_argument("--version", action="version", version=f"otel-replay {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    only = command if command in _COMMANDS else None
    for name, add in _COMMANDS.items():
        if only is None or name == only:
            add(sub)
    return parser


def _record(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rec = sub.add_parser(
        "record",
        help="run CMD against live providers and record it",
        usage=f"otel-replay record --cassette PATH [options] {_USAGE_CMD}",
    )
    rec.add_argument("--cassette", type=Path, required=True)
    _gateway_options(rec)


def _replay(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rep = sub.add_parser(
        "replay",
        help="run CMD against recorded responses",
        usage=f"otel-replay replay --cassette PATH [options] {_USAGE_CMD}",
    )
    rep.add_argument("--cassette", type=Path, required=True)
    rep.add_argument(
        "--mode",
        choices=MODES,
        default=None,
        help="strict (default when CI is set) | auto (default) | record | off",
    )
    rep.add_argument(
        "--timing",
        choices=("fast", "recorded"),
        default="fast",
        help="replay streams as fast as possible or at the recorded pace",
    )
    _gateway_options(rep)
    add_fork_options(rep)


def _serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    srv = sub.add_parser(
        "serve",
        help="run the gateway alone until SIGINT/SIGTERM or EOF",
        description=f"Run the gateway alone: {PROTOCOL}.",
    )
    srv.add_argument("--cassette", type=Path)
    srv.add_argument("--mode", choices=MODES, default=None)
    srv.add_argument("--port", type=int, default=0)
    srv.add_argument("--grpc-port", type=int, default=0)
    srv.add_argument("--timing", choices=("fast", "recorded"), default="fast")
    _gateway_options(srv)


def _build(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from otel_replay.frontends.buildcmd import add_selection, output_path
    from otel_replay.frontends.emittest import add_emit_options

    bld = sub.add_parser("build", help="derive a cassette from trace files or a tracing backend")
    bld.add_argument("traces", nargs="*", type=Path, metavar="TRACES")
    bld.add_argument("-o", "--output", type=output_path, required=True, metavar="CASSETTE")
    add_selection(bld)
    add_emit_options(bld)
    bld.add_argument("--quiet", action="store_true", help="no progress display")


def _doctor(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from otel_replay.frontends.buildcmd import add_selection

    doc = sub.add_parser(
        "doctor", help="per source: model calls seen, how replayable, and what to fix"
    )
    doc.add_argument("traces", nargs="*", type=Path, metavar="TRACES")
    add_selection(doc)
    doc.add_argument("--json", action="store_true", help="the census as JSON on stdout")


def _why(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from otel_replay.providers import PROVIDERS

    why = sub.add_parser("why", help="explain the last (or the given) replay miss")
    why.add_argument("--cassette", type=Path, required=True)
    why.add_argument("--request", type=Path, help="a request body (JSON) to explain")
    apis = tuple(dict.fromkeys(row.api for row in PROVIDERS))
    why.add_argument("--provider", choices=apis, default=None)
    why.add_argument("--path", default=None, help="API path of --request (e.g. /v1/messages)")
    why.add_argument(
        "--suggest",
        action="store_true",
        help="print the narrowest rule (TOML) that turns the last miss into a hit",
    )
    _rules_option(why)


def _rules(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rules = sub.add_parser("rules", help="the matching rules in force")
    rules_sub = rules.add_subparsers(dest="rules_command", required=True, metavar="ACTION")
    show = rules_sub.add_parser("show", help="print the rules in force, as a rule file")
    show.add_argument("profile", nargs="?", help="only this agent profile (default: all)")
    show.add_argument("--cassette", type=Path, help="also the rules recorded in this cassette")
    _rules_option(show)


def _refresh(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ref = sub.add_parser("refresh", help="record a cassette again with its recorded command")
    ref.add_argument("cassette", type=Path, metavar="CASSETTE")
    ref.add_argument("--yes", action="store_true", help="run it without asking")


def _demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub.add_parser("demo", help="record and replay a built-in agent against a stub upstream")


def _mcp_stdio(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    stdio = sub.add_parser(
        "mcp-stdio",
        help="in an agent's MCP configuration, in place of a stdio MCP server",
        usage="otel-replay mcp-stdio NAME -- CMD... (the server's command)",
    )
    stdio.add_argument("name", metavar="NAME", help="the server's name in the cassette")


def _report(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rep = sub.add_parser("report", help="one self-contained HTML page of a run's spans")
    rep.add_argument("traces", nargs="+", type=Path, metavar="TRACES", help="trace files")
    rep.add_argument(
        "-o", "--output", type=Path, required=True, metavar="FILE.html", help="or FILE.md"
    )


def _diff(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dif = sub.add_parser("diff", help="align two runs' trajectories (trace files or cassettes)")
    dif.add_argument("base", type=Path, metavar="BASE", help="trace file or cassette")
    dif.add_argument("new", type=Path, metavar="NEW", help="trace file or cassette")
    dif.add_argument(
        "--format",
        choices=("text", "md", "html"),
        default=None,
        help="default: by -o's extension, else text; exit 0 when equal, 1 when they differ",
    )
    dif.add_argument("-o", "--output", type=Path, metavar="FILE", help="default: stdout")


_COMMANDS: dict[str, Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = {
    "record": _record,
    "replay": _replay,
    "serve": _serve,
    "build": _build,
    "doctor": _doctor,
    "why": _why,
    "rules": _rules,
    "refresh": _refresh,
    "demo": _demo,
    "mcp-stdio": _mcp_stdio,
    "report": _report,
    "diff": _diff,
}
"""The commands, in the order ``--help`` lists them: what adds each one's parser."""


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    own, command = _split_command(args_list)
    defer_bundles()  # the gateway reads the certificate bundle only if it forwards over TLS
    with paused_gc():
        args = _parser(next((a for a in own if not a.startswith("-")), None)).parse_args(own)
    try:
        if args.command in ("record", "replay"):
            if not command:
                print(
                    f"otel-replay {args.command}: give the agent command after --", file=sys.stderr
                )
                return 2
            return run_command(args, command)
        if args.command == "serve":
            return serve_command(args)
        if args.command == "build":
            from otel_replay.frontends.buildcmd import build_command

            return build_command(args)
        if args.command == "doctor":
            from otel_replay.frontends.buildcmd import doctor_command

            return doctor_command(args)
        if args.command == "why":
            from otel_replay.frontends.whycmd import why_command

            return why_command(
                args.cassette,
                args.request,
                args.provider,
                args.path,
                rules=args.rules,
                suggest=args.suggest,
            )
        if args.command == "rules":
            from otel_replay.frontends.rulescmd import show_rules

            return show_rules(args.profile, args.cassette, args.rules)
        if args.command in ("report", "diff"):
            from otel_replay.frontends import reportcmd

            if args.command == "report":
                return reportcmd.report_command(args.traces, args.output)
            return reportcmd.diff_command(args.base, args.new, args.format, args.output)
        if args.command == "refresh":
            from otel_replay.frontends.refreshcmd import refresh_command

            return refresh_command(args.cassette, args.yes)
        if args.command == "mcp-stdio":
            from otel_replay.frontends.mcp_stdio import mcp_stdio

            return mcp_stdio(args.name, command)
        if args.command == "demo":
            from otel_replay.testing.demo import run_demo

            return run_demo()
    except OtelReplayError as exc:
        print(f"otel-replay: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 2


def run() -> None:
    """The ``otel-replay`` command: ``main``, then exit at once. Everything the run was
    asked to write is written and closed by then; what is left is the interpreter
    freeing a loaded cassette object by object (tens of ms an agent's run would wait)."""
    code = main()
    logging.shutdown()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # what the interpreter's own exit does when its output is gone
        code = code or 120
    os._exit(code)


if __name__ == "__main__":
    run()
