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


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _uses(path: Path, modules: set[str]) -> set[str]:
    """The package's modules ``path`` imports, wherever the import stands (at the top, in a
    function, under ``TYPE_CHECKING``): ``from a import b`` uses module ``a.b`` when there
    is one, else ``a``. A module's own packages are not counted: Python imports them first,
    whoever asks."""
    name = _module_name(path)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{alias.name}" for alias in node.names} & modules
            found |= subs
            if len(subs) < len(node.names):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found & modules if m != name and not name.startswith(m + ".")}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan's, iteratively)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(graph):
        if root in order:
            continue
        work = [(root, iter(sorted(graph[root])))]
        order[root] = low[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in order:
                    order[nxt] = low[nxt] = len(order)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], order[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == order[node]:
                    members = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.append(member)
                        if member == node:
                            break
                    if len(members) > 1:
                        circles.append(sorted(members))
    return circles


def test_circles_are_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": {"e"}}
    assert sorted(_circles(graph)) == [["a", "b", "c"], ["e", "e2"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_circle_of_imports() -> None:
    """No module imports, however late, a module that imports it back, directly or round a
    ring: each one can be read, and changed, knowing only what lies below it."""
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {_module_name(path) for path in paths}
    graph = {_module_name(path): _uses(path, modules) for path in paths}
    circles = _circles(graph)
    assert not circles, "\n".join(" ⇄ ".join(circle) for circle in circles)
