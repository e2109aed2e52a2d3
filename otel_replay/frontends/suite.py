"""One pytest run's cassettes, coordinated across every process of the run.

A cassette is a suite-level object: within one run — the pytest-xdist controller and all
its workers together — the first block that writes a cassette in ``record`` mode starts it
afresh and every later block appends to it; ``auto`` always appends. Blocks write under
the cassette's lock (``cassette.model.locked``), and :meth:`SuiteRun.cassette`, called under
that lock, says whether the run wrote the cassette before (:meth:`SuiteRun.misses` does the
same for its misses file, so every block's misses stay for ``why``). The run's claims live in a
directory the controller makes and hands to its workers in their ``workerinput``; each
claim keeps the cassette's interactions as they were before the run, for the change
report. Workers send their blocks back in their ``workeroutput``, so the controller
decides "unused" once, over all blocks, and reports the run as one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from otel_replay.cassette.model import load, write_atomic
from otel_replay.core.errors import CassetteError
from otel_replay.reports.run import Summary, summary_from_json
from otel_replay.reports.suite import (
    CassetteChange,
    compare,
    fingerprints,
    unused_message,
    unused_recordings,
)

__all__ = ["BlockResult", "OtelReplayUnusedWarning", "Outcome", "SuiteRun", "fail_run"]

_RUN_KEY = "otel_replay_run"  # workerinput: the run's directory
_OUTPUT_KEY = "otel_replay"  # workeroutput: the worker's blocks


class OtelReplayUnusedWarning(pytest.PytestWarning):
    """A cassette holds recordings that no test of the run used (decided once per run,
    over every block and pytest-xdist worker, and reported at its end).

    Silence it with ``filterwarnings =
    ignore::otel_replay.frontends.pytest_plugin.OtelReplayUnusedWarning``
    or make it a failure with ``--otel-replay-unused=error``.
    """


def fail_run(session: pytest.Session) -> None:
    """The run exits non-zero even if every test passed."""
    session.exitstatus = max(int(session.exitstatus), pytest.ExitCode.TESTS_FAILED)


@dataclass(slots=True)
class BlockResult:
    """One block: its test, cassette and mode, its summary, how many recordings it loaded,
    whether it ended cleanly (no exception, no miss) and whether it was evaluated (not an
    auto-mode run whose misses could not go live for want of a key)."""

    nodeid: str
    cassette: str
    mode: str
    summary: Summary
    loaded: int = 0
    clean: bool = True
    evaluated: bool = True

    @property
    def outcome(self) -> str:
        """``passed``, ``failed`` or ``not evaluated`` (``reports.run.OUTCOMES``)."""
        if not self.evaluated:
            return "not evaluated"
        return "passed" if self.clean and not self.summary.failed else "failed"

    def to_json(self) -> dict[str, Any]:
        return {
            "nodeid": self.nodeid,
            "cassette": self.cassette,
            "mode": self.mode,
            "summary": self.summary.to_json(),
            "loaded": self.loaded,
            "clean": self.clean,
            "evaluated": self.evaluated,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> BlockResult:
        return cls(
            doc["nodeid"],
            doc["cassette"],
            doc["mode"],
            summary_from_json(doc["summary"]),
            doc["loaded"],
            doc["clean"],
            doc.get("evaluated", True),
        )


@dataclass(slots=True)
class Outcome:
    """What the run did to its cassettes, decided once at its end."""

    changes: list[CassetteChange]
    unused: dict[str, list[int]]
    unchecked: str | None  # why unused recordings were not looked for, if they were not
    errors: list[str]

    def lines(self, root: Path) -> list[str]:
        """The terminal summary's lines: each cassette written (its path relative to
        ``root`` when inside it), what could not be read back, and why unused recordings
        were not looked for."""
        lines = [change.line(_shown(change.cassette, root)) for change in self.changes]
        lines += self.errors
        if self.unchecked:
            lines.append(f"otel-replay: unused recordings not looked for: {self.unchecked}")
        return lines

    def write(self, terminal: Any, unused: str, session: pytest.Session) -> None:
        """The summary's lines on ``terminal``; each cassette's unused recordings once, as
        an error (``unused == "error"``) or as an :class:`OtelReplayUnusedWarning`."""
        for line in self.lines(Path(terminal.config.rootpath)):
            terminal.write_line(line)
        for cassette, found in sorted(self.unused.items()):
            message = unused_message(cassette, found)
            if unused == "warn":
                try:  # once, in the warnings summary, where filterwarnings can silence it
                    warnings.warn_explicit(OtelReplayUnusedWarning(message), None, cassette, 0)
                    continue
                except OtelReplayUnusedWarning:  # filterwarnings = error made it an error
                    fail_run(session)
            terminal.write_line(f"error: {message}", red=True)

    def to_json(self) -> dict[str, Any]:
        return {
            "cassettes": [change.to_json() for change in self.changes],
            "unused": dict(sorted(self.unused.items())),
            "unused_unchecked": self.unchecked,
            "errors": list(self.errors),
        }


class SuiteRun:
    """The run-wide state of one pytest run in this process (registered as a plugin)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        workerinput: dict[str, Any] = getattr(config, "workerinput", {})
        self.worker = _RUN_KEY in workerinput
        self._dir = Path(workerinput[_RUN_KEY]) if self.worker else None
        self.deselected = 0
        self.skipped = 0
        self.from_workers: list[BlockResult] = []
        self.blocked: list[str] = []
        self.lost_workers: list[str] = []

    @property
    def dir(self) -> Path:
        """The run's claims: made when first needed (most runs write no cassette)."""
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="otel-replay-run-"))
        return self._dir

    # -- writing a cassette ---------------------------------------------------------------
    def cassette(self, target: Path) -> bool:
        """Called with ``target``'s lock held, before a block writes it: whether this run
        wrote it already. The first call keeps what the file holds now, for the report."""
        marker = self._marker(target, "cassette")
        if marker.exists():
            return True
        before: list[tuple[str, str]] | None = None
        if target.exists():
            try:
                before = fingerprints(load(target))
            except CassetteError:
                before = None  # unreadable: the run replaces it, and reports it as new
        claim = {"cassette": os.path.abspath(target), "before": before}
        self._note(marker, json.dumps(claim), target)
        return False

    def misses(self, target: Path) -> bool:
        """Like :meth:`cassette`, for a cassette's misses file."""
        marker = self._marker(target, "misses")
        if marker.exists():
            return True
        self._note(marker, "{}", target)
        return False

    @staticmethod
    def _note(marker: Path, text: str, target: Path) -> None:
        """Write a claim; a failure is the cassette's (the session keeps its recordings
        and says where)."""
        try:
            write_atomic(marker, text)
        except OSError as exc:
            problem = f"cannot note the write in {marker.parent}: {exc.strerror or exc}"
            raise CassetteError(target, "", problem) from None

    def _marker(self, target: Path, kind: str) -> Path:
        name = hashlib.sha256(os.fsencode(os.path.abspath(target))).hexdigest()[:32]
        return self.dir / f"{kind}-{name}.json"

    def changes(self) -> tuple[list[CassetteChange], list[str]]:
        """Every cassette the run wrote, compared with what it held before."""
        changes, errors = [], []
        markers = self._dir.glob("cassette-*.json") if self._dir is not None else ()
        for marker in sorted(markers):
            claim = json.loads(marker.read_text())
            before = None if claim["before"] is None else [tuple(p) for p in claim["before"]]
            try:
                after = fingerprints(load(claim["cassette"]))
            except CassetteError as exc:
                errors.append(f"otel-replay: cannot read back what the run wrote: {exc}")
                continue
            changes.append(compare(claim["cassette"], before, after))
        return sorted(changes, key=lambda c: c.cassette), errors

    # -- the end of the run ---------------------------------------------------------------
    def finish(
        self, session: pytest.Session, results: list[BlockResult], blocked: list[str]
    ) -> Outcome | None:
        """On a worker: hand its blocks to the controller (None). Elsewhere: the run's
        blocks from every process (added to ``results``) and its :class:`Outcome`."""
        if self.worker:
            output: dict[str, Any] = getattr(self.config, "workeroutput", {})
            output[_OUTPUT_KEY] = {
                "blocks": [r.to_json() for r in results],
                "blocked": list(blocked),
                "deselected": self.deselected,
            }
            return None
        results.extend(self.from_workers)
        blocked.extend(self.blocked)
        changes, errors = self.changes()
        unchecked = self._unchecked(session)
        unused = {} if unchecked else unused_recordings(results)
        if not any(r.mode in ("strict", "auto") for r in results):
            unchecked = None  # nothing replayed: nothing to say about unused recordings
        return Outcome(changes, unused, unchecked, errors)

    def _unchecked(self, session: pytest.Session) -> str | None:
        """Why this run cannot tell an unused recording: not every test ran."""
        if self.lost_workers:
            return f"{', '.join(self.lost_workers)} ended early"
        for n, what in ((self.deselected, "deselected"), (self.skipped, "skipped")):
            if n:
                return f"{n} test{'s' if n != 1 else ''} {what}"
        if session.shouldstop or session.shouldfail:
            return "the run stopped early"
        return None

    def cleanup(self) -> None:
        if not self.worker and self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    # -- hooks ----------------------------------------------------------------------------
    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected += len(items)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Skipped tests (counted where the run is reported: on the xdist controller, for
        every worker) may use recordings that then look unused."""
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skipped += 1

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """pytest-xdist, on the controller: tell a worker where the run's claims are."""
        node.workerinput[_RUN_KEY] = str(self.dir)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """pytest-xdist, on the controller: a worker finished; take its blocks."""
        output = getattr(node, "workeroutput", {}).get(_OUTPUT_KEY)
        if output is None or error is not None:
            self.lost_workers.append(str(node.gateway.id))
            if output is None:
                return
        self.from_workers.extend(BlockResult.from_json(doc) for doc in output["blocks"])
        self.blocked.extend(output["blocked"])
        self.deselected = max(self.deselected, output["deselected"])


def _shown(path: str, root: Path) -> str:
    """``path`` relative to ``root`` when it is inside it."""
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return path
