"""What a run did: its :class:`Summary` (the summary line, the ``summary`` JSON) and the
JSON run report ``--report FILE`` (CLI and API) and ``--otel-replay-report`` (pytest
plugin, one entry per block) write."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from otel_replay.reports.misses import Miss
from otel_replay.reports.prices import money

__all__ = [
    "OUTCOMES",
    "Block",
    "Summary",
    "combined",
    "run_report",
    "suite_report",
    "summary_from_json",
]


@dataclass(slots=True)
class Summary:
    """The counts of one run (or block), as the summary line and the report state them."""

    mode: str
    replayed: int = 0
    live: int = 0
    misses: list[str] = field(default_factory=list)
    keyless: int = 0
    """Of ``misses``, those in auto mode that could not go live: no key of the provider
    was set (a test whose every miss is one is *not evaluated*, not failed)."""
    spans_received: int = 0
    unused: list[int] = field(default_factory=list)
    hits: list[int] = field(default_factory=list)
    cassette: str | None = None
    traces: str | None = None
    not_saved: int = 0  # model calls not saved (or refused) because a write failed
    write_errors: list[str] = field(default_factory=list)  # what could not be written
    live_cost: float | None = None  # the list price of the live calls that could be priced
    live_unpriced: int = 0  # live calls whose model (or usage) is not known
    bypassed: list[str] = field(default_factory=list)
    """Model calls the agent's own spans show that never reached the gateway."""
    forked_at: int | None = None  # a fork: the model call it went live at
    tools_replayed: int = 0  # tool calls (MCP ``tools/call``) answered from the cassette
    tools_live: int = 0  # tool calls that went to the real server
    tools_misses: int = 0  # MCP requests that missed (also among ``misses``)
    by_turn: int = 0
    """Of ``replayed``, the turns matched by what they add to their conversation's last
    one (a coding agent's fast path; the full matcher would take the same)."""

    def cost_text(self) -> str | None:
        """``live calls cost $0.0123`` (and how many could not be priced), or None."""
        if not self.live or self.live_cost is None or self.live_unpriced == self.live:
            return None
        text = f"live calls cost {money(self.live_cost)}"
        if self.live_unpriced:
            text += f" ({self.live_unpriced} not priced)"
        return text

    def line(self) -> str:
        n, spans = len(self.misses), self.spans_received
        line = (
            f"otel-replay: {self.replayed} replayed · {self.live} live · "
            f"{n} {'miss' if n == 1 else 'misses'} · "
            f"{_tool_calls(self.tools_replayed, 'replayed')}"
            f"{_tool_calls(self.tools_live, 'live')}"
            f"{spans} {'span' if spans == 1 else 'spans'} received"
        )
        if self.write_errors:
            line += f" · {self.not_saved} not saved"
        cost = self.cost_text()
        if cost is not None:
            line += f" · {cost}"
        if self.bypassed:
            n = len(self.bypassed)
            line += f" · {n} model {'call' if n == 1 else 'calls'} bypassed the gateway"
        if self.forked_at is not None:
            line += f" · forked at call {self.forked_at}"
        return line

    @property
    def not_evaluated(self) -> bool:
        """Whether each of an auto-mode run's misses could not go live for want of the
        provider's key (and nothing else failed): its test is *not evaluated* rather than
        failed, unless the run asks to be strict about it."""
        misses = len(self.misses)
        return (
            self.mode == "auto" and misses > 0 and self.keyless == misses and not self.write_errors
        )

    @property
    def failed(self) -> bool:
        """Whether the run failed: a miss, a write that failed, or (strict) a model call
        that bypassed the gateway."""
        bypass = bool(self.bypassed) and self.mode == "strict"
        return bool(self.misses or self.write_errors) or bypass

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "replayed": self.replayed,
            "replayed_by_turn": self.by_turn,
            "live": self.live,
            "misses": list(self.misses),
            "keyless_misses": self.keyless,
            "spans_received": self.spans_received,
            "hits": list(self.hits),
            "unused": list(self.unused),
            "cassette": self.cassette,
            "traces": self.traces,
            "not_saved": self.not_saved,
            "write_errors": list(self.write_errors),
            "live_cost": self.live_cost,
            "live_unpriced": self.live_unpriced,
            "bypassed": list(self.bypassed),
            "forked_at": self.forked_at,
            "tools": {
                "replayed": self.tools_replayed,
                "live": self.tools_live,
                "misses": self.tools_misses,
            },
        }


def summary_from_json(doc: dict[str, Any]) -> Summary:
    """The :class:`Summary` whose ``to_json`` is ``doc`` (a pytest-xdist worker's)."""
    fields = dict(doc)
    tools = fields.pop("tools", None) or {}
    by_turn = fields.pop("replayed_by_turn", 0)
    keyless = fields.pop("keyless_misses", 0)
    return Summary(
        **fields,
        keyless=keyless,
        by_turn=by_turn,
        tools_replayed=tools.get("replayed", 0),
        tools_live=tools.get("live", 0),
        tools_misses=tools.get("misses", 0),
    )


def combined(summaries: Iterable[Summary], mode: str) -> Summary:
    """The totals of several runs: replayed, live, misses and spans added up."""
    total = Summary(mode=mode)
    for summary in summaries:
        total.replayed += summary.replayed
        total.by_turn += summary.by_turn
        total.live += summary.live
        total.misses.extend(summary.misses)
        total.keyless += summary.keyless
        total.spans_received += summary.spans_received
        total.not_saved += summary.not_saved
        total.write_errors.extend(summary.write_errors)
        if summary.live_cost is not None:
            total.live_cost = (total.live_cost or 0.0) + summary.live_cost
        total.live_unpriced += summary.live_unpriced
        total.bypassed.extend(summary.bypassed)
        total.tools_replayed += summary.tools_replayed
        total.tools_live += summary.tools_live
        total.tools_misses += summary.tools_misses
    return total


def _tool_calls(count: int, state: str) -> str:
    """``2 tool calls replayed · `` in the summary line; nothing for none."""
    if not count:
        return ""
    return f"{count} tool {'call' if count == 1 else 'calls'} {state} · "


def run_report(summary: Summary, misses: Iterable[Miss]) -> dict[str, Any]:
    """One run's report: its summary and, per miss, what missed where."""
    report = summary.to_json()
    report["miss_details"] = [miss.brief() for miss in misses]
    return report


class Block(Protocol):
    """One block of a test session: the test, its cassette and mode, and its summary."""

    @property
    def nodeid(self) -> str: ...
    @property
    def cassette(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def summary(self) -> Summary: ...
    @property
    def outcome(self) -> str: ...


OUTCOMES = ("passed", "failed", "not evaluated")
"""A block's outcome: replayed (or recorded) cleanly; failed (a miss, an error); or *not
evaluated*: in auto mode its misses could not go live, no key of the provider being set."""


def suite_report(
    totals: Summary, blocks: Sequence[Block], blocked: Sequence[str]
) -> dict[str, Any]:
    """A test session's report: the totals, the blocks by outcome, the egress attempts
    blocked, and each block."""
    outcomes = dict.fromkeys(OUTCOMES, 0)
    for b in blocks:
        outcomes[b.outcome] += 1
    return {
        "totals": totals.to_json(),
        "outcomes": outcomes,
        "blocked": list(blocked),
        "blocks": [
            {
                "test": b.nodeid,
                "cassette": b.cassette,
                "mode": b.mode,
                "outcome": b.outcome,
                **b.summary.to_json(),
            }
            for b in blocks
        ],
    }
