"""The package's rooms import downwards only, in the order ``docs/how-it-works.md``
gives: a room may use its own modules and those of rooms below it, never above."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "otel_replay"

LAYER = {
    "core": 0,
    "streams": 1,
    "redaction": 1,
    "providers": 2,
    "matching": 3,
    "spans": 3,
    "readers": 3,
    "cassette": 3,
    "otlp": 3,
    "sources": 4,
    "pipeline": 5,
    "session": 5,
    "reports": 5,
    "gateway": 6,
    "frontends": 7,
    "hooks": 7,
    "testing": 8,
}
# the `demo` command runs the built-in agent against the built-in stub
ALLOWED = {("frontends/cli.py", "otel_replay.testing.demo")}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("otel_replay.")}


def test_every_room_has_its_place() -> None:
    rooms = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert rooms == set(LAYER)


def test_imports_run_down_the_layers() -> None:
    upward = []
    for path in sorted(PACKAGE.glob("*/*.py")):
        room = path.parent.name
        where = f"{room}/{path.name}"
        for module in sorted(_imports(path)):
            target = module.split(".")[1]
            if target in LAYER and LAYER[target] > LAYER[room] and (where, module) not in ALLOWED:
                upward.append(f"{where} imports {module}")
    assert not upward, "\n".join(upward)
