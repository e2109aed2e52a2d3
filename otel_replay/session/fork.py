"""A fork of a recorded run: its first model calls replayed, the rest live.

``replay --live-from N [--model MODEL] --fork-to NEW`` (and ``fork=(N, MODEL)`` in the
Python API and the pytest plugin): the calls before the N-th replay strictly, a miss
among them failing as in strict mode, since a fork means something only from the
recorded prefix; from the N-th on they go live (``gateway.fork`` decides), sent with
MODEL in place of the model the agent asked for. The whole run is written to NEW, the
original cassette untouched: the prefix as recorded, the continuation as answered, each
interaction's ``provenance`` saying which it was and which model answered.

This module holds the fork's plan (:class:`ForkPlan`), where it happens (a call number,
or a point read off ``report`` or ``diff``: ``tool:NAME``, ``text:TEXT``; see
``fork_points``), its state during the run (:class:`Fork`) and the cassette it writes.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from otel_replay import providers
from otel_replay.cassette.format import Cassette
from otel_replay.cassette.model import dump, locked
from otel_replay.core.errors import ConfigError
from otel_replay.core.exchange import JSON, Exchange
from otel_replay.providers.named import named_prefix
from otel_replay.providers.spec import ProviderSpec
from otel_replay.session.fork_points import fork_point, provider_of_model

__all__ = ["Fork", "ForkPlan", "fork_target"]


@dataclass(frozen=True, slots=True)
class ForkPlan:
    """What a run asks of its fork: the point (``live_from``: a call number, 1-based, or
    a selector ``tool:NAME`` / ``text:TEXT``), the cassette it writes (``target``), the
    model its live calls are sent with (None: the agent's own) and the upstreams the run
    was given a base URL for (``given``: where a model of another provider may go)."""

    live_from: int | str
    target: Path
    model: str | None = None
    given: frozenset[str] = field(default_factory=frozenset)

    def given_to(self, named: Iterable[str], environ: Mapping[str, str]) -> ForkPlan:
        """The plan, knowing the upstreams the run was given: ``named`` (by option), and
        those whose base URL the caller's environment sets."""
        given = {*named, *(row.name for row in providers.PROVIDERS if _sets_base(row, environ))}
        return ForkPlan(self.live_from, self.target, self.model, frozenset(given))


def fork_target(cassette: Path, live_from: int | str, model: str | None) -> Path:
    """Where a fork is written when no target is named: beside ``cassette``, named after
    it, the point and the model (``incident.fork-3-gpt-4o-mini.json``), so forks of one
    incident against several models sit side by side."""
    words = [str(live_from), *([model] if model else [])]
    tail = "-".join("".join(c if c.isalnum() or c in "._" else "-" for c in w) for w in words)
    return cassette.with_name(f"{cassette.stem}.fork-{tail.strip('-')}.json")


class Fork:
    """A run's fork: the call it goes live at (``at``), validated against the cassette
    ``origin`` holds, and the model calls counted as they come."""

    def __init__(self, plan: ForkPlan, cassette: Cassette, origin: Path) -> None:
        self.plan = plan
        self.origin = origin
        self.model = plan.model
        self.at = fork_point(plan.live_from, cassette.interactions)
        if _same_file(plan.target, origin):
            raise ConfigError(
                f"--fork-to {plan.target} is the cassette forked; name another file "
                "(the original is kept as it is)"
            )
        if plan.model is not None:
            _check_model(plan.model, cassette.interactions[self.at - 1 :], plan.given, self.at)
        self._lock = threading.Lock()
        self.calls = 0  # model calls seen so far
        self.prefix_calls: list[int] = []  # the replayed calls' numbers, in replay order
        self.problem: str | None = None  # why the fork's cassette was not written

    @property
    def reached(self) -> bool:
        """Whether the run made the call the fork goes live at."""
        return self.calls >= self.at

    def take(self) -> int:
        """A model call came: its number in the run (1-based)."""
        with self._lock:
            self.calls += 1
            return self.calls

    def live(self, number: int) -> bool:
        """Whether call ``number`` goes live (it is at or past the fork point)."""
        return number >= self.at

    def live_provenance(self, number: int, asked: JSON) -> dict[str, JSON]:
        """The provenance of live call ``number`` whose agent asked for model ``asked``."""
        model = self.model if self.model is not None else asked
        return {
            "call": number,
            "origin": "live",
            "model": model if isinstance(model, str) else None,
        }

    # -- the cassette written ------------------------------------------------------------
    def writable(self, misses: int) -> bool:
        """Whether the fork's cassette is written; else ``problem`` says why not: a miss
        (before the fork point the run is not the recorded one; after it, a call could
        not go live), or a run that never reached the fork point."""
        target = self.plan.target
        if misses:
            self.problem = f"{target} not written: the run missed"
        elif not self.reached:
            made = f"{self.calls} model call{'s' if self.calls != 1 else ''}"
            self.problem = (
                f"{target} not written: the fork at call {self.at} did not happen "
                f"(the run made {made})"
            )
        return self.problem is None

    def write(
        self,
        replayed: Sequence[Exchange],
        live: Sequence[Exchange],
        derived: Sequence[Exchange],
        run: dict[str, JSON],
    ) -> None:
        """Write the fork's cassette anew (a fork is one run): the ``replayed``
        recordings in the order replayed, each with its provenance, then the ``live``
        exchanges as ``derived`` from the run's traces (a transport fault too: the run is
        written as it went). ``run``: the run's own provenance."""
        prefix = []
        for number, recorded in zip(self.prefix_calls, replayed, strict=True):
            model = (recorded.provenance or {}).get("model", recorded.request.model)
            provenance: dict[str, JSON] = {"call": number, "origin": "replayed", "model": model}
            prefix.append(replace(recorded, provenance=provenance))  # the loaded one unchanged
        order = {exchange.span_id: i for i, exchange in enumerate(live)}
        kept = sorted(
            (ex for ex in derived if ex.span_id in order), key=lambda ex: order[ex.span_id]
        )
        source = {**run, "fork": {"from": str(self.origin), "at": self.at, "model": self.model}}
        with locked(self.plan.target) as target:
            dump(Cassette(interactions=prefix + kept, source=source), target)


def _sets_base(row: ProviderSpec, environ: Mapping[str, str]) -> bool:
    return any(environ.get(name) for name in row.base_envs())


def _same_file(a: Path, b: Path) -> bool:
    if a.exists() and b.exists():
        return os.path.samefile(a, b)
    return a.resolve() == b.resolve()


def _check_model(model: str, calls: Sequence[Exchange], given: frozenset[str], at: int) -> None:
    """A model replaces the model in the live calls' bodies, on their own provider's API:
    refuse a body that names no model (the API names it in the path), and a model of
    another provider unless the
    run was given an upstream for the call's (one serving that model on this API)."""
    family = provider_of_model(model)
    for number, exchange in enumerate(calls, start=at):
        body = exchange.raw_request  # None: a call without a body (a list of models)
        if isinstance(body, dict) and "model" not in body:
            raise ConfigError(
                f"--model {model}: recorded call {number} ({exchange.provider} "
                f"{exchange.request.endpoint}) names no model in its body to replace"
            )
        elsewhere = family is not None and family != exchange.provider
        if (
            elsewhere
            and exchange.provider not in given
            and not named_prefix(exchange.request.endpoint)
        ):
            raise ConfigError(
                f"--model {model} is a model of {family}, but call {number} is on the "
                f"{exchange.provider} API; give an upstream serving it there "
                f"(--upstream-{exchange.provider} URL) or a model of {exchange.provider}"
            )
