"""Two runs' trajectories aligned step by step: where they first part and what followed.

Steps are paired by kind and name (the model, the tool) in order, the way a sequence diff
pairs lines; paired steps are then compared fact by fact (model, system prompt, tools,
params, messages, answer; a tool's arguments). Each row of the result says what changed
in words a reviewer reads: an extra tool call, changed tool arguments, a changed answer,
one more model call, a miss.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from otel_replay.reports.trajectory import Step, Trajectory

__all__ = ["Row", "TrajectoryDiff", "diff_trajectories"]


@dataclass(slots=True)
class Row:
    """One aligned pair: ``op`` is ``equal``, ``changed``, ``added`` (only in NEW) or
    ``removed`` (only in BASE); ``changes`` lists (fact, BASE value, NEW value)."""

    op: str
    base: Step | None
    new: Step | None
    changes: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def what(self) -> str:
        """What happened at this row, in a few words."""
        step = self.new or self.base
        assert step is not None
        if self.new is not None and self.new.kind == "miss":
            return "replay miss"
        if self.op == "equal":
            return "same"
        noun = "tool call" if step.kind == "tool" else "model call"
        if self.op == "added":
            return f"extra {noun}"
        if self.op == "removed":
            return f"missing {noun}"
        labels = [label for label, _, _ in self.changes]
        if step.kind == "tool":
            return "tool arguments changed"
        if labels == ["answer"]:
            return "model answer changed"
        return ", ".join(_LABELS.get(label, label) for label in labels) + " changed"


_LABELS = {"messages": "prompt", "answer": "answer"}


@dataclass(slots=True)
class TrajectoryDiff:
    """The aligned rows of BASE and NEW; ``first`` is the index of the first row that
    differs (None when the runs are equal)."""

    base: Trajectory
    new: Trajectory
    rows: list[Row]

    @property
    def first(self) -> int | None:
        return next((i for i, row in enumerate(self.rows) if row.op != "equal"), None)

    @property
    def equal(self) -> bool:
        return self.first is None

    def headline(self) -> str:
        """One line: equal, or the first divergence."""
        first = self.first
        nb, nn = len(self.base.steps), len(self.new.steps)
        if first is None:
            return f"equal: the same {nb} step{'s' if nb != 1 else ''}"
        row = self.rows[first]
        step = row.new or row.base
        assert step is not None
        subject = step.name if step.kind != "miss" else ""
        where = f"step {first + 1}"
        text = f"differ at {where}: {row.what}"
        if subject:
            text += f" ({step.kind} {subject})"
        if step.kind == "model":  # as a fork counts them (replay --live-from)
            side = self.new if row.new is not None else self.base
            text += f" at call {_model_calls(side.steps, step)}"
        return text + f" · BASE {nb} steps, NEW {nn}"


def _model_calls(steps: list[Step], step: Step) -> int:
    """The number of model step ``step`` among ``steps``'s model calls (1-based)."""
    models = [s for s in steps if s.kind == "model"]
    return next(i for i, s in enumerate(models, 1) if s is step)


def _compare(base: Step, new: Step) -> list[tuple[str, str, str]]:
    was, now = dict(base.facts), dict(new.facts)
    labels = list(dict.fromkeys([*was, *now]))
    return [
        (label, was.get(label, ""), now.get(label, ""))
        for label in labels
        if label in was and label in now and was[label] != now[label]
    ]


def _pair(base: Step, new: Step) -> list[Row]:
    if base.key != new.key or new.kind == "miss":
        return [Row("removed", base, None), Row("added", None, new)]
    changes = _compare(base, new)
    return [Row("changed" if changes else "equal", base, new, changes)]


def diff_trajectories(base: Trajectory, new: Trajectory) -> TrajectoryDiff:
    """BASE and NEW aligned; a miss in NEW always stands where it happened."""
    a = [step.key for step in base.steps]
    b = [step.key for step in new.steps]
    rows: list[Row] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                rows.extend(_pair(base.steps[i], new.steps[j]))
        elif op == "replace":
            width = max(i2 - i1, j2 - j1)
            for k in range(width):
                i, j = i1 + k, j1 + k
                if i < i2 and j < j2:
                    rows.extend(_replaced(base.steps[i], new.steps[j]))
                elif i < i2:
                    rows.append(Row("removed", base.steps[i], None))
                else:
                    rows.append(Row("added", None, new.steps[j]))
        elif op == "delete":
            rows.extend(Row("removed", base.steps[i], None) for i in range(i1, i2))
        else:
            rows.extend(Row("added", None, new.steps[j]) for j in range(j1, j2))
    return TrajectoryDiff(base, new, rows)


def _replaced(base: Step, new: Step) -> list[Row]:
    """Two steps of the same kind in the same place (another model, another tool) are one
    changed step; a miss in place of a model call is that call missing and the miss."""
    if base.kind == new.kind and new.kind != "miss":
        changes = _compare(base, new)
        if base.name != new.name:
            changes.insert(0, ("model" if base.kind == "model" else "tool", base.name, new.name))
        return [Row("changed", base, new, list(dict.fromkeys(changes)))]
    if new.kind == "miss":
        return [Row("changed", base, new, [("answer", base.fact("answer") or "", new.name)])]
    return [Row("removed", base, None), Row("added", None, new)]
