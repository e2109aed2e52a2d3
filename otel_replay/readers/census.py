"""What the readers made of a trace, per source: the summary ``build`` and ``doctor`` print.

A *source* is an instrumentation and its version (the instrumentation scope of the spans,
or of the log records). For each one the census counts the model calls it saw and how many
are replayable exactly (exact request bodies: the gateway's own spans, OpenInference's
call arguments, Claude Code's body events), semantically (a semantic-convention view:
the request components it recorded are compared, its parameters only by the names it
recorded, the response is rebuilt), or not at all
— and for those, the reason and the setting that would fix it (``Problem``). Readers
that skip a call for a reason of their own report it with :meth:`Census.skipped`, or
hand over their own tally (:meth:`Census.tallied`).

Which span is a model call and why one could not be read are rules on the span's content
(``readers.diagnose``); this module only counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from otel_replay.core.exchange import COMPONENTS, JSON, Exchange
from otel_replay.readers.registry import Fidelity

__all__ = ["NO_CALLS_FIX", "Census", "Problem", "Source", "Tally"]

NO_CALLS_FIX = (
    "a model call is a span of otel-replay's own, of the GenAI semantic conventions"
    " (gen_ai.provider.name or gen_ai.system, and a model operation), an OpenInference LLM"
    " or EMBEDDING span, or Claude Code's raw-body log events — record the agent through"
    " the gateway (otel-replay record -- CMD), or turn on an instrumentation of its model"
    " client with content capture"
)
"""What to do about a trace that holds no model call (an agent's own telemetry only)."""


@dataclass(frozen=True, slots=True, order=True)
class Source:
    """An instrumentation (scope name) and its version; "" when the spans do not say."""

    name: str
    version: str = ""

    def __str__(self) -> str:
        name = self.name or "(unnamed instrumentation)"
        return f"{name} {self.version}" if self.version else name


@dataclass(frozen=True, slots=True, order=True)
class Problem:
    """Why a model call cannot be replayed (or is compared on less), and what fixes it."""

    reason: str
    fix: str = ""

    def __str__(self) -> str:
        return f"{self.reason} — {self.fix}" if self.fix else self.reason


@dataclass(slots=True)
class Tally:
    """One source's counts."""

    calls: int = 0
    exact: int = 0
    semantic: int = 0
    problems: Counter[Problem] = field(default_factory=Counter)
    """Calls that cannot be replayed, by reason."""
    unknown: Counter[str] = field(default_factory=Counter)
    """Semantically replayable calls, by request component their source did not record
    (not compared on replay); ``params`` for a call that recorded none."""
    by_name: Counter[str] = field(default_factory=Counter)
    """Semantically replayable calls whose params are compared by name (their source does
    not record every parameter), by parameter recorded: the others are not compared."""
    forms: Counter[str] = field(default_factory=Counter)
    """Semantically replayable calls, by lossy form a component was compared in."""
    tools: int = 0
    """Tool executions seen (execute_tool, OpenInference TOOL, MCP spans)."""
    tool_content: int = 0
    """Those whose arguments and result were captured (replayable as tool calls)."""
    tool_fixes: Counter[str] = field(default_factory=Counter)
    """Tool executions without content, by the setting that captures it."""
    unjudged: Counter[str] = field(default_factory=Counter)
    """Model calls a run's bypass check cannot judge, by why (``readers.evidence``)."""

    @property
    def not_replayable(self) -> int:
        return self.calls - self.exact - self.semantic

    def to_json(self) -> dict[str, JSON]:
        return {
            "calls": self.calls,
            "exact": self.exact,
            "semantic": self.semantic,
            "not_replayable": self.not_replayable,
            "problems": [
                {"reason": p.reason, "fix": p.fix, "calls": n}
                for p, n in sorted(self.problems.items())
            ],
            "not_compared": dict(sorted(self.unknown.items())),
            "params_compared_by_name": dict(sorted(self.by_name.items())),
            "compared_as_recorded": dict(sorted(self.forms.items())),
            **({"tool_calls": self.tools, "tool_content": self.tool_content} if self.tools else {}),
            **({"bypass_unjudged": dict(sorted(self.unjudged.items()))} if self.unjudged else {}),
        }


class Census:
    """Counts per source, filled while the readers run."""

    def __init__(self) -> None:
        self.sources: dict[Source, Tally] = {}
        self.others: Counter[Source] = Counter()
        """Spans that are no model call, by source."""

    def tally(self, source: Source) -> Tally:
        found = self.sources.get(source)
        if found is None:
            found = self.sources[source] = Tally()
        return found

    def read(self, source: Source, fidelity: Fidelity, exchange: Exchange) -> None:
        """A model call a reader read, at ``fidelity``."""
        tally = self.tally(source)
        tally.calls += 1
        if fidelity >= Fidelity.BODY:
            tally.exact += 1
            return
        tally.semantic += 1
        request = exchange.request
        for name in COMPONENTS:
            if name not in request.known and name != "params":
                tally.unknown[name] += 1
        if "params" not in request.known:
            if request.params:
                tally.by_name.update(list(request.params))
            else:
                tally.unknown["params"] += 1
        tally.forms.update(exchange.request.views)

    def tool(self, source: Source, fix: str | None) -> None:
        """A tool execution; ``fix``: None when its arguments and result were captured,
        else the setting that captures them."""
        tally = self.tally(source)
        tally.tools += 1
        if fix is None:
            tally.tool_content += 1
        else:
            tally.tool_fixes[fix] += 1

    def unjudged(self, source: Source, why: str) -> None:
        """A model call a run's bypass check cannot judge, and why."""
        self.tally(source).unjudged[why] += 1

    def skipped(self, source: Source, problem: Problem) -> None:
        """A model call no reader could replay, and why."""
        tally = self.tally(source)
        tally.calls += 1
        tally.problems[problem] += 1

    def other(self, source: Source) -> None:
        """A span that is no model call."""
        self.others[source] += 1

    def tallied(
        self, source: Source, calls: int, exact: int, problems: Mapping[Problem, int]
    ) -> None:
        """A reader's own tally (Claude Code's): calls it saw, read exactly, and skipped
        by reason."""
        tally = self.tally(source)
        tally.calls += calls
        tally.exact += exact
        tally.problems.update(problems)

    @property
    def calls(self) -> int:
        return sum(t.calls for t in self.sources.values())

    @property
    def replayable(self) -> int:
        return sum(t.exact + t.semantic for t in self.sources.values())

    def lines(self) -> list[str]:
        """The summary, one line per source and one per reason below it."""
        out = []
        for source in sorted(self.sources):
            tally = self.sources[source]
            calls = f"{tally.calls} model call{'s' if tally.calls != 1 else ''}"
            out.append(
                f"{source}: {calls} · {tally.exact} exactly · {tally.semantic} semantically"
                f" · {tally.not_replayable} not replayable"
            )
            for problem, count in sorted(tally.problems.items()):
                out.append(f"  {count} × {problem}")
            if tally.unknown:
                names = ", ".join(f"{name} ({n})" for name, n in sorted(tally.unknown.items()))
                out.append(f"  not recorded, so not compared on replay: {names}")
            if tally.by_name:
                names = ", ".join(f"{name} ({n})" for name, n in sorted(tally.by_name.items()))
                out.append(
                    f"  params compared by name, only those the trace recorded: {names};"
                    " others not compared"
                )
            if tally.forms:
                names = ", ".join(f"{name} ({n})" for name, n in sorted(tally.forms.items()))
                out.append(f"  compared only in what the trace's form expresses: {names}")
            if tally.tools:
                seen = f"{tally.tools} tool call{'s' if tally.tools != 1 else ''}"
                out.append(f"  {seen} · {tally.tool_content} with arguments and result captured")
                for fix, count in sorted(tally.tool_fixes.items()):
                    out.append(f"  {count} × tool content not captured — {fix}")
            for why, count in sorted(tally.unjudged.items()):
                calls = f"{count} model call{'s' if count != 1 else ''}"
                out.append(f"  bypass check: {calls} {why}")
        if not out:
            out.append("no model calls found" + self._others())
            out.append(f"  {NO_CALLS_FIX}")
        return out

    def _others(self) -> str:
        if not self.others:
            return ""
        spans = sum(self.others.values())
        names = ", ".join(f"{source} ({n})" for source, n in sorted(self.others.items()))
        return f" among {spans} span{'s' if spans != 1 else ''}: {names}"

    def to_json(self) -> dict[str, JSON]:
        return {
            "calls": self.calls,
            "replayable": self.replayable,
            "sources": [
                {"instrumentation": s.name, "version": s.version, **self.sources[s].to_json()}
                for s in sorted(self.sources)
            ],
        }
