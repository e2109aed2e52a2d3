"""The documentation says what the code does.

The reference pages are made from the code as the site builds (``docs/gen_ref.py``,
``docs/hooks.py``; ``make docs`` builds it strictly, and ``make test`` runs ``make docs``).
These tests hold the rest to the code: every option the parsers take is in the
reference, every command and option a hand-written page names exists, every page is in
the site's navigation and every task is one click from its home page, the commands
shown in "Getting started" print what the page says they print, and the README stays a
landing page.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_{name}", DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_ref = _load("gen_ref")


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return gen_ref.pages()


def _hand_written() -> dict[str, str]:
    """Every Markdown page written by hand: the site's and the repository's READMEs."""
    pages = {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for path in sorted(DOCS.rglob("*.md"))
    }
    for path in [ROOT / "README.md", *sorted(ROOT.glob("*/README.md"))]:
        pages[str(path.relative_to(ROOT))] = path.read_text(encoding="utf-8")
    for path in sorted((ROOT / "examples").glob("*/README.md")):
        pages[str(path.relative_to(ROOT))] = path.read_text(encoding="utf-8")
    return pages


def _nav_paths() -> list[str]:
    """Every page the site's navigation lists (mkdocs.yml)."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text[text.index("\nnav:") :]
    return re.findall(r"([\w./-]+\.md)\s*$", nav, flags=re.MULTILINE)


# -- the reference holds every option ------------------------------------------------------


def _section(page: str, command: str) -> str:
    anchor = "{#" + command.replace(" ", "-") + "}"
    start = page.index(anchor)
    end = page.find("\n## ", start)
    return page[start : end if end != -1 else None]


def test_every_command_and_option_is_in_the_cli_reference(generated: dict[str, str]) -> None:
    page = generated["reference/cli.md"]
    commands = gen_ref.commands()
    assert {"record", "replay", "serve", "build", "why", "rules show", "demo"} <= set(commands)
    for name, parser in commands.items():
        section = _section(page, name)
        for flag in gen_ref.options(parser):
            assert f"`{flag}`" in section, f"{name} {flag} missing from the CLI reference"
        for action in parser._actions:
            if not action.option_strings and action.help:
                assert action.help.split()[0] in section


def test_every_pytest_option_is_in_the_pytest_reference(generated: dict[str, str]) -> None:
    page = generated["reference/pytest.md"]
    recorder = gen_ref.pytest_options()
    assert recorder.options
    for names, _kwargs in recorder.options:
        for name in names:
            assert f"`{name}`" in page
    for name, _help, _default in recorder.ini:
        assert f"`{name}`" in page


def test_the_environment_reference_follows_the_provider_table(
    generated: dict[str, str],
) -> None:
    from otel_replay import providers

    page = generated["reference/environment.md"]
    for row in providers.PROVIDERS:
        for name in (*row.base_envs(), *row.credential_env, *row.placeholder_env):
            assert f"`{name}`" in page
    for name in gen_ref.agent_variables():
        assert f"`{name}`" in page
    for _comment, names in gen_ref.envvar_groups():
        for _constant, variable, _note in names:
            assert f"`{variable}`" in page


def test_the_schema_references_hold_every_field(generated: dict[str, str]) -> None:
    import json

    for name, page in (("rules", "reference/rules.md"), ("cassette", "reference/cassette.md")):
        schema = json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text())
        fields: set[str] = set()

        def walk(node: Any, fields: set[str] = fields) -> None:
            if isinstance(node, dict):
                fields.update(node.get("properties", {}))
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(schema)
        for field in fields:
            assert f"`{field}`" in generated[page], f"{field} missing from {page}"


# -- hand-written pages name only what exists ------------------------------------------------

_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", flags=re.MULTILINE | re.DOTALL)
_INVOCATION = re.compile(r"(?:^|[\s(`$])otel-replay\s+([a-z][a-z-]*)(.*)")
_COMMAND_START = re.compile(r"(?:^|[;(|`]|&&|\$)\s*(?:\w+=\S*\s+)*$")
"""What may stand before a command: nothing, a prompt, a pipe or ``&&``, variables."""


def _code_lines(text: str) -> list[str]:
    """The code of a page, line by line: its fenced blocks (continued lines joined) and
    its inline code spans."""
    lines = []
    for block in _FENCE.findall(text):
        lines += block.replace("\\\n", " ").splitlines()
    prose = _FENCE.sub("", text)
    lines += _CODE_SPAN.findall(prose)
    return lines


def _invocations(text: str) -> list[tuple[str, list[str]]]:
    """(command, options) for each ``otel-replay COMMAND …`` in a page's code; the
    agent's own command line (after ``--``) left out."""
    found = []
    commands = gen_ref.commands()
    for line in _code_lines(text):
        for match in _INVOCATION.finditer(line):
            command, rest = match.group(1), match.group(2)
            if rest.startswith(":"):  # a summary line ("otel-replay report: 4 spans")
                continue
            at = match.start() + match.group(0).index("otel-replay")
            if not _COMMAND_START.search(line[:at]):
                continue  # an argument ("npm install otel-replay vitest"), not a command
            words = rest.split(" -- ")[0].split()
            if words and f"{command} {words[0]}" in commands:
                command = f"{command} {words[0]}"
            flags = [w.split("=")[0].strip("[]`(),|") for w in words if w.startswith(("--", "[--"))]
            found.append((command, [f for f in flags if f.startswith("--") and f != "--"]))
    return found


def test_hand_written_pages_name_only_commands_and_options_that_exist() -> None:
    commands = gen_ref.commands()
    wrong = []
    seen = 0
    for path, text in _hand_written().items():
        for command, flags in _invocations(text):
            seen += 1
            if command not in commands:
                wrong.append(f"{path}: otel-replay {command}: no such command")
                continue
            known = set(gen_ref.options(commands[command])) | {"--help", "--version"}
            for flag in flags:
                # --upstream-PROVIDER stands for each provider's option
                if flag not in known and not (
                    flag.endswith(("-PROVIDER", "-NAME"))
                    and any(k.startswith(flag.rsplit("-", 1)[0] + "-") for k in known)
                ):
                    wrong.append(f"{path}: otel-replay {command} {flag}: no such option")
    assert seen > 30  # the pages do show commands: the scan found them
    assert not wrong, "\n".join(wrong)


def test_hand_written_pages_name_only_pytest_options_that_exist() -> None:
    names = {name for names, _kw in gen_ref.pytest_options().options for name in names}
    wrong = []
    for path, text in _hand_written().items():
        for flag in set(re.findall(r"--otel-replay[a-zA-Z-]*", text)):
            flag = flag.rstrip("-")
            if flag.endswith("-PROVIDER"):
                flag = flag.removesuffix("-PROVIDER")
                ok = any(name.startswith(flag + "-") for name in names)
            else:
                ok = flag in names
            if not ok:
                wrong.append(f"{path}: {flag}: the pytest plugin has no such option")
    assert not wrong, "\n".join(wrong)


def test_hand_written_pages_name_only_variables_the_code_knows() -> None:
    readers = [
        *(ROOT / "otel_replay").rglob("*.py"),
        # the npm package's own (OTEL_REPLAY_BIN, …) and its tests
        *(ROOT / "js" / "src").rglob("*.ts"),
        *(ROOT / "js" / "test").rglob("*.ts"),
        *sorted((ROOT / "collector").glob("*.yaml")),
    ]
    source = "\n".join(path.read_text(encoding="utf-8") for path in readers)
    wrong = []
    for path, text in _hand_written().items():
        for name in set(re.findall(r"\bOTEL_REPLAY_[A-Z_]*[A-Z]\b", text)):
            # OTEL_REPLAY_MCP_<NAME>_URL: one variable per MCP server, made from its name
            family = re.fullmatch(r"OTEL_REPLAY_MCP_[A-Z0-9_]+_URL", name)
            if family and '"OTEL_REPLAY_MCP_"' in source:
                continue
            if name not in source:
                wrong.append(f"{path}: {name}: no such variable is read")
    assert not wrong, "\n".join(wrong)


_ROOMS = (
    "core providers streams redaction matching cassette otlp spans readers pipeline session "
    "gateway reports frontends testing"
).split()
_PATH = re.compile(
    r"(?<![\w/.-])((?:otel_replay/)?(?:" + "|".join(_ROOMS) + r")/[\w/]+\.(?:py|json|css|js)"
    r"|tests/test_\w+\.py|(?:benchmarks|examples|schemas|collector|fuzz|docs)/[\w/.-]+\.\w+)"
)


def test_hand_written_pages_name_only_files_that_exist() -> None:
    """In the prose: code blocks show the reader's own files, and links are the site
    build's to check."""
    wrong = []
    for path, text in _hand_written().items():
        prose = re.sub(r"\]\([^)]*\)", "]", _FENCE.sub("", text))
        for name in set(_PATH.findall(prose)):
            name = name.rstrip(".")
            if "*" in name or "…" in name:
                continue
            in_package = ROOT / "otel_replay" / name.removeprefix("otel_replay/")
            if not (in_package.exists() or (ROOT / name).exists()):
                wrong.append(f"{path}: {name}: no such file")
    assert not wrong, "\n".join(wrong)


# -- the site: every page reachable, every task one click from home ------------------------


def test_every_page_is_in_the_navigation_and_every_nav_entry_exists() -> None:
    hooks = _load("hooks")
    nav = _nav_paths()
    assert len(nav) == len(set(nav))
    written = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    made = set(gen_ref.PAGES) | set(hooks.INCLUDED)
    assert written <= set(nav), f"pages left out of the navigation: {written - set(nav)}"
    assert set(nav) <= written | made, (
        f"navigation entries with no page: {set(nav) - written - made}"
    )
    for source in hooks.INCLUDED.values():
        assert (ROOT / source).is_file()


TASKS = {
    "getting started": "getting-started.md",
    "your agent": "agents/index.md",
    "SDKs and frameworks": "agents/frameworks.md",
    "coding agents": "agents/coding-agents.md",
    "TypeScript": "agents/typescript.md",
    "tools over MCP": "agents/mcp.md",
    "matching and rules": "matching.md",
    "misses and why": "misses.md",
    "production traces": "production/index.md",
    "backends": "production/backends.md",
    "pytest and suites": "pytest.md",
    "telemetry in tests": "telemetry.md",
    "reports and diffs": "reports.md",
    "forks": "forks.md",
    "providers": "providers/index.md",
    "secrets and security": "security.md",
    "the cassette format": "cassette.md",
    "benchmarks": "benchmarks/index.md",
    "how it works": "how-it-works.md",
    "the reference": "reference/cli.md",
}


def test_every_task_is_one_click_from_the_home_page() -> None:
    home = (DOCS / "index.md").read_text(encoding="utf-8")
    links = set(re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", home))
    missing = {task: page for task, page in TASKS.items() if page not in links}
    assert not missing, f"not linked from docs/index.md: {missing}"
    top = [path for path in _nav_paths() if path.count("/") == 0 or path.endswith("index.md")]
    assert set(top) - {"index.md", "changelog.md"} <= links | {"changelog.md"}


def test_the_readme_is_a_landing_page() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert "make demo" in text and "make test" in text
    assert "docs/report.png" in text
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README links to {target}, which is not there"


# -- getting started runs as shown -----------------------------------------------------------


def _console_blocks(text: str) -> list[list[tuple[str, list[str]]]]:
    """Each ``console`` block of a page: its commands (``$ …``), each with the lines it
    shows printed."""
    blocks = []
    for block in re.findall(r"^```console\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL):
        steps: list[tuple[str, list[str]]] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        blocks.append(steps)
    return blocks


def _normalised(lines: list[str]) -> list[str]:
    """Printed lines without what varies from run to run: temporary directories."""
    text = "\n".join(lines)
    text = re.sub(r"/[\w/.-]*?/otel-replay-demo-[\w]+", "/tmp/otel-replay-demo-…", text)
    return text.strip("\n").splitlines()


def test_the_commands_in_getting_started_print_what_the_page_shows(tmp_path: Path) -> None:
    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    blocks = _console_blocks(page)
    assert len(blocks) >= 2
    assert not re.search(r"^```(?:sh|bash|shell)$", page, flags=re.MULTILINE), (
        "a command shown in getting started goes in a console block, which this test runs"
    )
    shutil.copytree(ROOT / "examples" / "openai_agent", tmp_path / "examples" / "openai_agent")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CI"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    for steps in blocks:
        for command, shown in steps:
            argv = shlex.split(command)
            argv = [sys.executable if word == "python" else word for word in argv]
            if argv[0] == "otel-replay":
                argv = [sys.executable, "-m", "otel_replay", *argv[1:]]
            done = subprocess.run(
                argv,
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            printed = done.stdout.splitlines() + done.stderr.splitlines()
            assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
            assert _normalised(printed) == _normalised(shown), command


# -- the project speaks of itself ----------------------------------------------------------------

_ORDINALS = (
    "fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth "
    "fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"
).split()
PROCESS_WORDS = re.compile(
    "|".join(
        [
            r"\b(?:this|that|last|next|previous|earlier|later|every|each) stop(?:'s)?\b",
            r"\b(?:" + "|".join(_ORDINALS) + r") (?:pass|wave)\b",
            r"\b(?:the|this|that|a) (?:second|third) (?:pass|wave)\b",
            r"\bissues? #?\d+",
            r"\b(?:this|that|previous|last|earlier|next) session\b",
            r"\bstops? #?\d+\b",
        ]
    ),
    flags=re.IGNORECASE,
)
"""Words about how the project was written (its working stops, passes over the code, the
issues that asked for a change), which no user of it needs."""

_NOT_OURS = (".venv/", "node_modules/", "build/", ".git/")
_CAPTURED = ("benchmarks/claude_code_request.json", "benchmarks/codex_request.json")
"""Requests another program sent, kept as it sent them (its words, not the project's)."""


def _tracked_files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout.decode()
        names = [name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):  # not a checkout: the tree itself
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()]
    return [
        ROOT / name
        for name in names
        if not name.startswith(_NOT_OURS)
        and name not in _CAPTURED
        and "/node_modules/" not in name
        and not name.endswith(("-lock.json", ".lock"))
        and (ROOT / name).is_file()
    ]


def test_the_repository_speaks_of_the_project_not_of_how_it_was_written() -> None:
    found = []
    for path in _tracked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # images and other binary files
        for number, line in enumerate(text.splitlines(), 1):
            match = PROCESS_WORDS.search(line)
            if match:
                found.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)!r}")
    assert not found, "\n".join(found)


def test_the_process_words_are_found_where_they_are() -> None:
    # each said in two pieces, so that this file does not say it
    for said in ("as this " + "stop's run showed", "the seventeenth " + "pass", "issue " + "12"):
        assert PROCESS_WORDS.search(said), said
    for said in ("the run's stop", "a single pass over the text", "the session's gateway"):
        assert not PROCESS_WORDS.search(said), said


def test_the_readme_shows_what_the_demo_prints() -> None:
    """The README's excerpt of ``make demo`` is lines of the output that getting started
    shows (and the test above checks against a real run), in their order."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    excerpt = readme[readme.index("`make demo` ends") :]
    excerpt = excerpt[excerpt.index("```\n") + 4 :]
    excerpt = excerpt[: excerpt.index("```")]
    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    (demo,) = [shown for steps in _console_blocks(page) for cmd, shown in steps if "demo" in cmd]
    at = 0
    for line in excerpt.strip("\n").splitlines():
        assert line in demo[at:], f"README's demo line not in the demo's output: {line!r}"
        at = demo.index(line, at) + 1


def test_the_environment_reference_says_who_reads_each_variable() -> None:
    """Every variable the agent is given is listed with the clients that read it, from
    the gateway's own table (``gateway/environment.py`` ``VARIABLE_READERS``)."""
    from otel_replay.gateway.environment import VARIABLE_READERS

    page = gen_ref.environment_page()
    assert "| variable | value | read by |" in page
    for name, value in gen_ref.agent_variables().items():
        who = VARIABLE_READERS.get(name, "")
        assert who, f"{name}: the gateway's table says nobody reads it"
        assert f"| `{name}` | `{value}` | {gen_ref._cell(who)} |" in page
