"""``replay``'s fork options: ``--live-from N [--model MODEL] --fork-to NEW`` (see
``session.fork``), read into a :class:`~otel_replay.session.fork.ForkPlan`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from otel_replay.core.errors import ConfigError

if TYPE_CHECKING:
    from otel_replay.session.fork import ForkPlan

__all__ = ["add_fork_options", "fork_plan"]


def add_fork_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("fork (replay up to a call, then go live)")
    group.add_argument(
        "--live-from",
        metavar="N",
        help="replay the model calls before the N-th strictly, then go live; N is a number "
        "(1-based), tool:NAME (the call after that tool's result) or text:TEXT (the first "
        "call whose request holds TEXT)",
    )
    group.add_argument(
        "--model", metavar="MODEL", help="send the live calls with this model instead"
    )
    group.add_argument(
        "--fork-to",
        type=Path,
        metavar="NEW",
        help="the cassette the forked run is written to (the original is kept)",
    )


def fork_plan(args: argparse.Namespace) -> ForkPlan | None:
    """The fork the options ask for, None when none; a ConfigError for options that do
    not make one."""
    if args.live_from is None:
        extra = [o for o, v in (("--model", args.model), ("--fork-to", args.fork_to)) if v]
        if extra:
            raise ConfigError(f"{' and '.join(extra)} go with --live-from N (a fork)")
        return None
    if args.fork_to is None:
        raise ConfigError("--live-from needs --fork-to NEW: the cassette the fork is written to")
    if args.mode not in (None, "strict"):
        raise ConfigError(
            f"--live-from replays strictly up to the fork point, then goes live; "
            f"it does not run in --mode {args.mode}"
        )
    if args.model is not None and not args.model.strip():
        raise ConfigError("--model needs a model name")
    from otel_replay.session.fork import ForkPlan  # a fork's machinery: only for a fork
    from otel_replay.session.fork_points import parse_live_from

    return ForkPlan(parse_live_from(args.live_from), args.fork_to, args.model)
