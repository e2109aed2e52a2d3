"""``otel-replay build … --emit-test PATH --entry MODULE:FUNCTION``: beside the cassette, a
pytest file that calls the agent's entry point with the run's recorded input, inside a
strict replay of the cassette, and expects its recorded output.

The run's entry is read while the build reads the spans (``readers.entry``), so it comes
from whatever the build reads. The cassette is built into a file beside its target and
put in place once the test is written: when the run's input or output cannot be read,
the build writes neither file and says why (exit 2).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from otel_replay.core.errors import ConfigError

if TYPE_CHECKING:  # the command line is parsed without loading the build
    from otel_replay.pipeline.testsource import EntryPoint

__all__ = ["Emission", "add_emit_options", "emission"]


def add_emit_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--emit-test",
        type=Path,
        metavar="PATH",
        help="also write a pytest file that replays the run (with --entry)",
    )
    parser.add_argument(
        "--entry",
        metavar="MODULE:FUNCTION",
        help="the agent's entry point the test calls with the recorded input",
    )


class Emission:
    """One ``--emit-test``: the collector the build feeds, and the files it writes."""

    def __init__(self, test: Path, point: EntryPoint, output: Path) -> None:
        from otel_replay.readers.entry import EntrySpans
        from otel_replay.redaction.redact import Redactor

        self.test = test
        self.point = point
        self.output = output
        self.redactor = Redactor.from_environment()
        self.entries = EntrySpans(self.redactor.json)
        self.staged = output.with_name(f".{output.name}.emit-{os.getpid()}.json")

    def build_options(self) -> dict[str, Any]:
        """What ``build_file`` is given for the test: the collector and the redactor
        (the same secrets hidden in both files)."""
        return {"entries": self.entries, "redactor": self.redactor}

    def finish(self, origin: str) -> None:
        """Write the test, then put the built cassette in place; ``ConfigError`` (and
        neither file) when the run's entry cannot be read."""
        from otel_replay.cassette.model import write_atomic
        from otel_replay.pipeline.testsource import render_test

        try:
            entry = self.entries.entry()
            text = render_test(entry, self.point, self._cassette(), self.output.stem, origin)
            try:
                write_atomic(self.test, text)
            except OSError as exc:
                raise ConfigError(f"--emit-test {self.test}: cannot write: {exc}") from None
            os.replace(self.staged, self.output)
        finally:
            self.staged.unlink(missing_ok=True)
        print(f"otel-replay build: test of trace {entry.trace_id} → {self.test}", file=sys.stderr)
        name = self.test.name
        if not (name.startswith("test_") or name.endswith("_test.py")):
            print(
                f"otel-replay build: pytest collects {name} only when named or configured so"
                " (test_*.py, *_test.py by default)",
                file=sys.stderr,
            )

    def _cassette(self) -> str | None:
        from otel_replay.pipeline.testsource import cassette_reference

        cassette = self.output.resolve()
        try:
            relative = PurePosixPath(
                Path(os.path.relpath(cassette, self.test.parent.resolve())).as_posix()
            )
        except ValueError:  # another drive: no relative path leads there
            relative = None
        return cassette_reference(relative, str(cassette))


def emission(args: argparse.Namespace) -> Emission | None:
    """The ``--emit-test`` asked for, or None; ``ConfigError`` when one of
    ``--emit-test`` and ``--entry`` comes without the other or ``--entry`` is malformed."""
    if args.emit_test is None:
        if args.entry is not None:
            raise ConfigError("--entry goes with --emit-test PATH (the test to write)")
        return None
    if args.entry is None:
        raise ConfigError(
            "--emit-test needs --entry MODULE:FUNCTION, the agent's entry point the test calls"
        )
    from otel_replay.pipeline.testsource import parse_entry

    return Emission(args.emit_test, parse_entry(args.entry), Path(args.output))
