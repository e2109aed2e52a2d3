"""The reference pages, made from the code so that they cannot drift from it.

Each page is a function returning Markdown: the command line from the argument parser
(``otel_replay.frontends.cli``), the pytest options from the plugin's ``pytest_addoption``,
the rule file and the cassette from the JSON schemas in ``schemas/``, the environment
from the provider table (``PROVIDERS``), the variables module (``core/envvars.py``) and
what the gateway gives the agent (``gateway/environment.py``).

``docs/hooks.py`` adds these pages to the site as it builds (``make docs``), so the site
always shows the code it was built from; ``python docs/gen_ref.py DIR`` writes them to
DIR to read them as files. ``tests/test_docs.py`` checks the hand-written pages against
the same sources.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GENERATED_NOTE = "<!-- made by docs/gen_ref.py from the code; edit the code, not this page -->\n\n"


def _cell(text: object) -> str:
    """Text for a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _prose(text: object) -> str:
    """Schema prose for a table cell: ``<kind:N>`` shown, not taken for HTML."""
    return _cell(text).replace("<", "&lt;")


def _code(text: object) -> str:
    return f"`{text}`" if text not in (None, "") else ""


# -- the command line ------------------------------------------------------------------


def cli_parser() -> argparse.ArgumentParser:
    from otel_replay.frontends.cli import _parser

    return _parser()


def subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, Any]]:
    """(name, help, subparser) for each subcommand of ``parser``, in the parser's order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def commands(parser: argparse.ArgumentParser | None = None) -> dict[str, Any]:
    """Every command, nested ones as ``rules show``, with its parser."""
    parser = parser or cli_parser()
    found: dict[str, Any] = {}

    def walk(prefix: str, node: argparse.ArgumentParser) -> None:
        for name, _help, sub in subcommands(node):
            full = f"{prefix} {name}".strip()
            found[full] = sub
            walk(full, sub)

    walk("", parser)
    return found


def options(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string ``parser`` takes (``--help`` left out)."""
    return [
        flag
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction)
        for flag in action.option_strings
    ]


def _value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        return " \\| ".join(f"`{choice}`" for choice in action.choices)
    metavar = action.metavar or action.dest.upper()
    return f"`{metavar}`"


def _default(action: argparse.Action) -> str:
    if action.nargs == 0 or action.required or action.default in (None, [], argparse.SUPPRESS):
        return ""
    return f"`{action.default}`"


def _arguments_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.option_strings:
            name = ", ".join(f"`{flag}`" for flag in action.option_strings)
        else:
            name = f"`{action.metavar or action.dest.upper()}`"
            if action.nargs in ("+", "*"):
                name += " …"
        extra = []
        if action.required:
            extra.append("required")
        if isinstance(action, argparse._AppendAction) and "repeatable" not in (action.help or ""):
            extra.append("repeatable")
        if action.nargs == "?":
            extra.append("optional")
        text = _cell(action.help or "")
        if extra:
            text = f"{text} ({', '.join(extra)})" if text else f"({', '.join(extra)})"
        rows.append(f"| {name} | {_value(action)} | {_default(action)} | {text} |")
    if not rows:
        return ["No options."]
    return ["| argument | value | default | does |", "|---|---|---|---|", *rows]


def cli_page() -> str:
    parser = cli_parser()
    lines = [
        "# Command line",
        "",
        GENERATED_NOTE.strip(),
        "",
        f"`otel-replay` (also `python -m otel_replay`): {parser.description}",
        "",
        "Exit codes: 0 for success; 1 for a replay miss in strict mode, a build that can "
        "replay nothing, a `doctor` that found calls it cannot replay, or a `diff` that "
        "found the runs differ; 2 for a usage or configuration error (one line saying "
        "what to change). `record` and `replay` otherwise exit with the agent's own code.",
        "",
        "| command | does |",
        "|---|---|",
    ]
    found = commands(parser)
    for name in found:
        lines.append(f"| [`{name}`](#{name.replace(' ', '-')}) | {_cell(_help_of(parser, name))} |")
    lines += ["", "Global options: `--version`, `--help` (also after every command).", ""]
    for name, sub in found.items():
        usage = " ".join(sub.format_usage().split()).removeprefix("usage: ")
        lines += [
            f"## `{name}` {{#{name.replace(' ', '-')}}}",
            "",
            _cell(sub.description or _help_of(parser, name)),
            "",
            "```text",
            usage,
            "```",
            "",
            *_arguments_table(sub),
            "",
        ]
    return "\n".join(lines)


def _parent(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    node = parser
    for word in name.split()[:-1]:
        node = next(sub for n, _h, sub in subcommands(node) if n == word)
    return node


def _help_of(parser: argparse.ArgumentParser, name: str) -> str:
    last = name.split()[-1]
    return next((h for n, h, _ in subcommands(_parent(parser, name)) if n == last), "")


# -- the pytest plugin ------------------------------------------------------------------


class _Recorder:
    """Stands in for pytest's parser and option group: records what the plugin adds."""

    def __init__(self) -> None:
        self.options: list[tuple[tuple[str, ...], dict[str, Any]]] = []
        self.ini: list[tuple[str, str, Any]] = []

    def getgroup(self, *_args: object, **_kwargs: object) -> _Recorder:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.options.append((names, kwargs))

    def addini(self, name: str, help: str, **kwargs: Any) -> None:
        self.ini.append((name, help, kwargs.get("default")))


def pytest_options() -> _Recorder:
    from otel_replay.frontends import pytest_plugin

    recorder = _Recorder()
    pytest_plugin.pytest_addoption(recorder)  # type: ignore[arg-type]
    return recorder


def pytest_page() -> str:
    recorder = pytest_options()
    lines = [
        "# pytest options",
        "",
        GENERATED_NOTE.strip(),
        "",
        "The plugin is registered by installing otel-replay (entry point `pytest11`). "
        "Its command-line options:",
        "",
        "| option | value | default | does |",
        "|---|---|---|---|",
    ]
    for names, kw in recorder.options:
        if kw.get("action") in ("store_true", "store_false"):
            value = ""
        elif kw.get("choices"):
            value = " \\| ".join(f"`{c}`" for c in kw["choices"])
        else:
            value = _code(kw.get("metavar") or kw.get("dest", "").upper())
        default = kw.get("default")
        shown = "" if default in (None, [], False) else f"`{default}`"
        text = _cell(kw.get("help", ""))
        if kw.get("action") == "append" and "repeatable" not in text:
            text += " (repeatable)"
        lines.append(f"| {', '.join(f'`{n}`' for n in names)} | {value} | {shown} | {text} |")
    lines += ["", "Its ini settings (`[tool.pytest.ini_options]`, `pytest.ini`):", ""]
    lines += ["| setting | default | does |", "|---|---|---|"]
    for name, help_text, default in recorder.ini:
        lines.append(f"| `{name}` | {_code(default)} | {_cell(help_text)} |")
    lines.append("")
    return "\n".join(lines)


# -- the JSON schemas -------------------------------------------------------------------


def _type_of(schema: dict[str, Any]) -> str:
    if "$ref" in schema and "type" not in schema:
        return f"[{schema['$ref'].rsplit('/', 1)[-1]}](#{_def_anchor(schema['$ref'])})"
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " \\| ".join(kind)
    if kind in ("array", None) and isinstance(schema.get("items"), dict):
        return f"array of {_type_of(schema['items'])}"
    if "anyOf" in schema:
        return " or ".join(_type_of(option) for option in schema["anyOf"])
    return kind or "any"


def _def_anchor(ref: str) -> str:
    return "def-" + ref.rsplit("/", 1)[-1].lower()


def _constraints(schema: dict[str, Any]) -> str:
    said = []
    if "pattern" in schema:
        said.append(f"pattern `{schema['pattern']}`")
    for key, word in (("minimum", "≥"), ("maximum", "≤")):
        if key in schema:
            said.append(f"{word} {schema[key]}")
    for key, word in (("minLength", "length ≥"), ("maxLength", "length ≤")):
        if key in schema:
            said.append(f"{word} {schema[key]}")
    return "; ".join(said)


def _fields_table(schema: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    properties = dict(schema.get("properties", {}))
    ref = schema.get("$ref")
    if ref and not properties.keys() - {"request"}:
        properties = {**defs[ref.rsplit("/", 1)[-1]].get("properties", {}), **properties}
    if not properties:
        return []
    required = set(schema.get("required", []))
    if ref:
        required |= set(defs[ref.rsplit("/", 1)[-1]].get("required", []))
    rows = ["| field | type | required | meaning |", "|---|---|---|---|"]
    for name, prop in properties.items():
        text = _prose(prop.get("description", ""))
        limits = _constraints(prop)
        if limits:
            text = f"{text} ({limits})" if text else limits
        rows.append(
            f"| `{name}` | {_type_of(prop)} | {'yes' if name in required else ''} | {text} |"
        )
    return rows


def _conditional(schema: dict[str, Any]) -> list[str]:
    """The ``if`` / ``then`` / ``else`` of an object schema, in words."""
    condition = schema.get("if", {}).get("properties", {})
    if not condition:
        return []
    said = " and ".join(
        f"`{name}` is {_type_of(rule)}"
        if "const" in rule
        else f"`{name}` has " + ", ".join(f"`{n}`" for n in rule.get("required", []))
        for name, rule in condition.items()
    )

    def outcome(branch: dict[str, Any]) -> str:
        parts = []
        if branch.get("required"):
            parts.append("requires " + ", ".join(f"`{n}`" for n in branch["required"]))
        if branch.get("not", {}).get("required"):
            parts.append("forbids " + ", ".join(f"`{n}`" for n in branch["not"]["required"]))
        for name, rule in branch.get("properties", {}).items():
            parts.append(f"`{name}` is {_type_of(rule)}")
        return "; ".join(parts)

    lines = [f"- When {said}: {outcome(schema.get('then', {}))}."]
    if "else" in schema:
        lines.append(f"- Otherwise: {outcome(schema['else'])}.")
    return [*lines, ""]


def _walk_objects(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, object schema) for ``schema`` and each object nested in its properties."""
    if schema.get("properties"):
        yield path, schema
    for name, prop in schema.get("properties", {}).items():
        items = prop.get("items")
        if isinstance(items, dict) and items.get("properties"):
            yield from _walk_objects(items, f"{path}.{name}[]")
        elif prop.get("properties"):
            yield from _walk_objects(prop, f"{path}.{name}")


def schema_page(name: str, title: str, intro: str) -> str:
    path = ROOT / "schemas" / name
    schema = json.loads(path.read_text(encoding="utf-8"))
    defs = schema.get("$defs", {})
    lines = [f"# {title}", "", GENERATED_NOTE.strip(), "", intro, ""]
    lines += [_prose(schema.get("description", "")), ""]
    for where, part in _walk_objects(schema, "(top level)"):
        lines += [f"## `{where}`", ""]
        if part.get("description") and part is not schema:
            lines += [_prose(part["description"]), ""]
        lines += [*_fields_table(part, defs), ""]
        lines += _conditional(part)
    for def_name, part in defs.items():
        table = _fields_table(part, defs)
        text = _prose(part.get("description", ""))
        lines += [f"## `{def_name}` {{#def-{def_name.lower()}}}", ""]
        if text:
            lines += [text, ""]
        if not table:
            limits = _constraints(part)
            lines += [f"Type: {_type_of(part)}" + (f" ({limits})" if limits else "") + ".", ""]
        lines += [*table, ""]
        lines += _conditional(part)
    lines += [
        "## The schema itself",
        "",
        f"`schemas/{name}`, as it is in the repository:",
        "",
        "```json",
        path.read_text(encoding="utf-8").rstrip(),
        "```",
        "",
    ]
    return "\n".join(lines)


def rules_page() -> str:
    return schema_page(
        "rules.schema.json",
        "Rule file",
        "The matching rules' file, `otel-replay.toml` (or `[tool.otel-replay]` in "
        "`pyproject.toml`, or `--rules FILE`), as its JSON Schema describes it. How the "
        "rules are used: [Matching and rules](../matching.md).",
    )


def cassette_page() -> str:
    return schema_page(
        "cassette.schema.json",
        "Cassette schema",
        "Every field of a cassette file, as its JSON Schema describes it. What the format "
        "is for and how it stays small: [The cassette format](../cassette.md).",
    )


# -- the environment ------------------------------------------------------------------------


def envvar_groups() -> list[tuple[str, list[tuple[str, str, str]]]]:
    """The variable constants of ``core/envvars.py``: (group comment, [(constant, variable,
    comment)]) in the module's order, each group under the comment lines above it."""
    source = (ROOT / "otel_replay" / "core" / "envvars.py").read_text(encoding="utf-8")
    lines = source.splitlines()
    groups: list[tuple[str, list[tuple[str, str, str]]]] = []
    for node in ast.parse(source).body:
        if not (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            continue
        value = node.value.value
        if not value.replace("_", "").isupper():  # the placeholder key is no variable
            continue
        comment = []
        at = node.lineno - 2
        while at >= 0 and lines[at].lstrip().startswith("#"):
            comment.insert(0, lines[at].lstrip("# ").strip())
            at -= 1
        line = lines[node.lineno - 1]
        trailing = line.split("#", 1)[1].strip() if "#" in line else ""
        if comment or not groups:
            groups.append((" ".join(comment), []))
        groups[-1][1].append((node.targets[0].id, value, trailing))
    return groups


def variable_readers() -> dict[str, str]:
    """Who reads each variable the agent is given (the gateway's own table)."""
    from otel_replay.gateway.environment import VARIABLE_READERS

    return dict(VARIABLE_READERS)


def agent_variables(mode: str = "record") -> dict[str, str]:
    """The variables an agent is given by a gateway on port P (HTTP only, no caller
    settings), as ``gateway/environment.py`` computes them."""
    from otel_replay.gateway.environment import agent_environment

    return agent_environment("http://127.0.0.1:P", None, mode, {})


def environment_page() -> str:
    from otel_replay import providers
    from otel_replay.core import envvars
    from otel_replay.providers.named import KNOWN

    readers = variable_readers()
    lines = [
        "# Environment variables",
        "",
        GENERATED_NOTE.strip(),
        "",
        "## What the agent is given",
        "",
        "`record`, `replay`, the pytest plugin and the Python API start the agent with "
        "these variables (the gateway on `127.0.0.1`, port `P`; `serve` prints them as "
        '`{"env": {...}}`). When the caller\'s `OTEL_EXPORTER_OTLP_PROTOCOL` (or a '
        "signal's own protocol variable) is `grpc`, that signal's endpoint names the gRPC "
        "port instead, with `…_INSECURE=true`.",
        "",
        "| variable | value | read by |",
        "|---|---|---|",
    ]
    for name, value in agent_variables().items():
        lines.append(f"| `{name}` | `{value}` | {_cell(readers.get(name, ''))} |")
    lines += [
        "",
        "## Per provider",
        "",
        "One row of the provider table (`otel_replay/providers/table.py`, `PROVIDERS`) "
        "per upstream. *Base URL*: the variables the agent's client reads, given the "
        "gateway's address; the caller's own value is where live calls go. *Credentials*: "
        "the caller's variables that make a request its own in auto mode. *Placeholder in "
        "replay*: given `"
        + envvars.PLACEHOLDER_KEY
        + "` when the caller has no credential for it, so the SDK starts. *Region*: given "
        "a placeholder region in strict replay when the caller sets none.",
        "",
        "| upstream | option | base URL | public default | credentials | placeholder in "
        "replay | region |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in providers.PROVIDERS:
        option = f"`--upstream-{row.name}`" if row.option_help else ""
        bases = ", ".join(f"`{name}`" for name in row.base_envs())
        default = _code(row.default_base) or _cell(row.base_example or "named by the caller")
        credentials = ", ".join(f"`{name}`" for name in row.credential_env)
        placeholders = ", ".join(f"`{name}`" for name in row.placeholder_env)
        if row.minted_credentials:
            placeholders = (placeholders + ", " if placeholders else "") + (
                f"`{envvars.GOOGLE_APPLICATION_CREDENTIALS}` (tokens the gateway mints)"
            )
        region = ", ".join(f"`{name}`" for name in row.region_env)
        lines.append(
            f"| {row.title} (`{row.name}`) | {option} | {bases} | {default} | {credentials} "
            f"| {placeholders} | {region} |"
        )
    lines += [
        "",
        "## OpenAI-compatible hosts",
        "",
        "`--upstream NAME=URL` (repeatable) names another OpenAI-compatible upstream: the "
        "agent gets `NAME_BASE_URL=http://127.0.0.1:P/u/NAME/v1` (during replay a "
        "placeholder `NAME_API_KEY` when it has none), and auto mode forwards a miss "
        "carrying the caller's own `NAME_API_KEY`. These names are known, so "
        "`--upstream NAME` alone means the public URL:",
        "",
        "| name | public base URL | `gen_ai.provider.name` |",
        "|---|---|---|",
    ]
    for name, host in KNOWN.items():
        lines.append(f"| `{name}` | {_code(host.base) or 'per deployment'} | `{host.semconv}` |")
    lines += [
        "",
        "## Every variable",
        "",
        "Every variable otel-replay reads or sets, as `otel_replay/core/envvars.py` lists "
        "them, grouped as there.",
        "",
    ]
    for comment, names in envvar_groups():
        if comment:
            lines += [_cell(comment).replace("``", "`"), ""]
        notes = any(trailing for _c, _v, trailing in names)
        lines.append(
            "| variable |" + (" note |" if notes else "") + (" read by |" if readers else "")
        )
        lines.append("|---|" + ("---|" if notes else "") + ("---|" if readers else ""))
        for _constant, variable, trailing in names:
            row = f"| `{variable}` |"
            if notes:
                row += f" {_cell(trailing)} |"
            if readers:
                row += f" {_cell(readers.get(variable, ''))} |"
            lines.append(row)
        lines.append("")
    listed = {variable for _c, names in envvar_groups() for _k, variable, _n in names}
    others = {name: who for name, who in readers.items() if name not in listed}
    if others:
        lines += ["Others the gateway's table names:", "", "| variable | read by |", "|---|---|"]
        lines += [f"| `{name}` | {_cell(who)} |" for name, who in sorted(others.items())]
        lines.append("")
    suffixes = ", ".join(f"`*{s}`" for s in envvars.SECRET_NAME_SUFFIXES)
    words = ", ".join(f"`{w}`" for w in envvars.SECRET_NAME_WORDS)
    lines += [
        "## Secret names",
        "",
        f"The value of a variable whose name ends in {suffixes} (after any `_2`-style "
        f"number), or holds {words} anywhere, is a secret: it becomes a placeholder before "
        "anything is written ([Secrets and security](../security.md)).",
        "",
    ]
    return "\n".join(lines)


# -- the Python API ---------------------------------------------------------------------------

PYTHON_API = (
    ("otel_replay.frontends.api", "record"),
    ("otel_replay.frontends.api", "replay"),
    ("otel_replay.frontends.api", "GatewayHandle"),
    ("otel_replay.frontends.transport", "ReplayTransport"),
    ("otel_replay.frontends.transport", "AsyncReplayTransport"),
    ("otel_replay.core.errors", "ReplayMiss"),
)
"""The names the Python API page documents, in its order (each is in ``otel_replay``)."""


def python_page() -> str:
    """The Python API: each name's signature and docstring, as the code has them."""
    import importlib
    import inspect

    lines = [
        "# Python API",
        "",
        "Everything below is importable from `otel_replay` (its `__all__` is the public "
        "API). The blocks start the gateway and point the environment at it; the "
        "transports answer in the caller's process, with no socket "
        "([In process](../pytest.md#in-process)).",
        "",
    ]
    for module_name, name in PYTHON_API:
        obj = getattr(importlib.import_module(module_name), name)
        try:
            signature = str(inspect.signature(obj))
        except (TypeError, ValueError):
            signature = "(...)"
        kind = "class" if inspect.isclass(obj) else "def"
        lines += [f"## `{name}`", "", "```python", f"{kind} {name}{signature}", "```", ""]
        lines += [_markdown(inspect.cleandoc(obj.__doc__ or "")), ""]
        if inspect.isclass(obj):
            found = {k: v for c in reversed(obj.__mro__[:-1]) for k, v in vars(c).items()}
            for member, value in found.items():
                doc = getattr(value, "__doc__", None) if not member.startswith("_") else None
                if isinstance(value, property) and doc:
                    lines += [f"- `{member}`: {_prose(_markdown(inspect.cleandoc(doc)))}"]
            lines.append("")
    return "\n".join(lines)


def _markdown(doc: str) -> str:
    """A docstring's reST as Markdown: a role's target by its last name, literals in
    single backquotes."""
    doc = re.sub(r":(?:class|func|attr|meth):`~?(?:[\w]+\.)*(\w+)`", r"`\1`", doc)
    return doc.replace("``", "`")


# -- all of them ------------------------------------------------------------------------------

PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli_page,
    "reference/pytest.md": pytest_page,
    "reference/rules.md": rules_page,
    "reference/cassette.md": cassette_page,
    "reference/environment.md": environment_page,
    "reference/python.md": python_page,
}
"""Each generated page, by its path under ``docs/``."""


def pages() -> dict[str, str]:
    """Every generated page's Markdown, by its path under ``docs/``."""
    return {path: make() for path, make in PAGES.items()}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python docs/gen_ref.py DIR  (writes the reference pages under DIR)")
        return 2
    out = Path(argv[0])
    for path, text in pages().items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(target)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
