"""The pytest file ``build --emit-test`` writes: a recorded run, as a test.

``render_test`` is pure: given the run's entry (``readers.entry``), the entry point to
call (``MODULE:FUNCTION``), where the cassette is from the test's folder and what the
build read, it returns the text of a test that calls the entry point with the recorded
input inside a strict replay of the cassette (the pytest plugin's ``otel_replay``
fixture) and asserts the recorded output. Values are written as Python literals the way
``ruff format`` lays them out, so a long prompt stays readable.
"""

from __future__ import annotations

import keyword
import re
import textwrap
from dataclasses import dataclass
from pathlib import PurePosixPath

from otel_replay.core.errors import ConfigError
from otel_replay.core.exchange import JSON
from otel_replay.readers.entry import Call, Entry

__all__ = ["CASSETTE_DIR", "EntryPoint", "cassette_reference", "parse_entry", "render_test"]

CASSETTE_DIR = "cassettes"
"""Where the plugin looks for a cassette given by bare name, beside the test file."""
_WIDTH = 88
_BARE = re.compile(r"[A-Za-z0-9_.-]+")
_WHAT = (
    "# Made by `otel-replay build --emit-test` (the agent's model calls replay strictly",
    "# from the cassette): a change to its prompts, tools or model fails this test with a",
    "# replay miss, which `otel-replay why` explains. Record the calls again with",
    "# pytest --otel-replay=record",
)


@dataclass(frozen=True, slots=True)
class EntryPoint:
    """``MODULE:FUNCTION``: the module to import from, and the (dotted) name in it."""

    module: str
    function: str

    @property
    def imported(self) -> str:
        return self.function.split(".")[0]

    @property
    def short(self) -> str:
        return self.function.split(".")[-1]


def _dotted(text: str) -> bool:
    names = text.split(".")
    return all(n.isidentifier() and not keyword.iskeyword(n) for n in names)


def parse_entry(text: str) -> EntryPoint:
    """``--entry MODULE:FUNCTION`` read; ``ConfigError`` saying the form otherwise."""
    module, sep, function = text.partition(":")
    if not sep or not _dotted(module) or not _dotted(function):
        raise ConfigError(
            f"--entry {text!r}: give MODULE:FUNCTION, the agent's entry point as the test "
            "imports it (e.g. my_agent.main:answer)"
        )
    return EntryPoint(module, function)


def cassette_reference(relative: PurePosixPath | None, absolute: str) -> str | None:
    """How the test names its cassette: a bare name when it is ``cassettes/NAME.json``
    beside the test (what the plugin looks up by name; None), else its path from the
    test's folder (``relative``), or ``absolute`` when none leads there."""
    if relative is None:
        return absolute
    parts = relative.parts
    if len(parts) == 2 and parts[0] == CASSETTE_DIR and relative.suffix == ".json":
        if _BARE.fullmatch(relative.stem):
            return None
    return relative.as_posix()


def _string(text: str) -> str:
    """A string literal, in double quotes where it holds none."""
    plain = repr(text)
    if plain.startswith("'") and '"' not in text:
        return '"' + plain[1:-1].replace("\\'", "'") + '"'
    return plain


def _chunks(text: str, room: int) -> list[str]:
    """``text`` cut after whitespace (and after each line end) into pieces whose literal
    fits ``room``, where the words allow."""
    chunks: list[str] = []
    for line in text.splitlines(keepends=True):
        current = ""
        for word in re.findall(r"\S*\s*", line):
            if current and len(_string(current + word)) > room:
                chunks.append(current)
                current = ""
            current += word
        if current:
            chunks.append(current)
    return chunks or [text]


def _literal(value: JSON, column: int, level: int = 0) -> str:
    """A JSON value as a Python literal laid out the way ``ruff format`` lays it out:
    on one line where it fits from ``column``, else one item (or piece of text) a line,
    indented from the statement's ``level``."""
    flat = _flat(value)
    if column + len(flat) <= _WIDTH:
        return flat
    inner = " " * (level + 4)
    if isinstance(value, str):
        pieces = _chunks(value, _WIDTH - len(inner))
        if len(pieces) == 1:
            return flat
        return "(\n" + "".join(f"{inner}{_string(p)}\n" for p in pieces) + " " * level + ")"
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            head = f"{_string(key)}: "
            items.append(head + _literal(item, len(inner) + len(head), level + 4))
        opening, closing = "{", "}"
    elif isinstance(value, list):
        items = [_literal(item, len(inner), level + 4) for item in value]
        opening, closing = "[", "]"
    else:
        return flat
    return opening + "\n" + "".join(f"{inner}{item},\n" for item in items) + " " * level + closing


def _flat(value: JSON) -> str:
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_string(k)}: {_flat(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flat(v) for v in value) + "]"
    return repr(value)


def _arguments(call: Call, opening: str) -> tuple[list[str], str]:
    """Constants to define, and the call's argument list after ``opening`` (the
    statement up to the parenthesis, in the test function's body)."""
    if len(call.args) == 1 and not call.kwargs and isinstance(call.args[0], str):
        return [f"PROMPT = {_literal(call.args[0], len('PROMPT = '))}"], "PROMPT"
    named = [("", a) for a in call.args] + [(f"{k}=", v) for k, v in call.kwargs.items()]
    flat = ", ".join(name + _flat(value) for name, value in named)
    if len(opening) + len(flat) + 1 <= _WIDTH:
        return [], flat
    lines = [name + _literal(value, 12 + len(name), 12) for name, value in named]
    return [], "\n" + "".join(f"            {line},\n" for line in lines) + "        "


def render_test(
    entry: Entry, point: EntryPoint, cassette: str | None, name: str, origin: str
) -> str:
    """The test's text. ``cassette``: the path from the test's folder (None: the bare
    ``name`` in ``cassettes/``); ``origin``: what the build read (files, backend)."""
    call = f"        result = {point.function}("
    constants, arguments = _arguments(entry.call, call)
    where = f"From trace {entry.trace_id} in {origin} (root span {entry.span_name!r})."
    header = [
        f'"""{point.module}.{point.function} answers as in a recorded run."""',
        "",
        textwrap.fill(
            where,
            _WIDTH,
            initial_indent="# ",
            subsequent_indent="# ",
            break_long_words=False,
            break_on_hyphens=False,
        ),
        *_WHAT,
        "",
    ]
    if cassette is not None:
        header += ["from pathlib import Path", ""]
    header += [f"from {point.module} import {point.imported}", "", ""]
    if cassette is not None:
        constants.insert(0, f"CASSETTE = Path(__file__).parent / {_string(cassette)}")
    constants.append(f"EXPECTED = {_literal(entry.output, len('EXPECTED = '))}")
    named = _string(name) if cassette is None else "CASSETTE"
    body = [
        "",
        "",
        f"def test_{point.short}_as_recorded(otel_replay):",
        f'    with otel_replay({named}, mode="strict"):',
        f"{call}{arguments})",
        "    assert result == EXPECTED",
        "",
    ]
    return "\n".join([*header, *constants, *body])
