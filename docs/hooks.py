"""MkDocs hooks: the pages made from the code, and the pages kept beside the code.

``on_files`` adds the reference pages ``docs/gen_ref.py`` makes (the command line, the
pytest options, the rule file, the cassette, the environment) and the Markdown files that
live beside what they describe (``benchmarks/README.md``, ``benchmarks/results.md``,
``collector/README.md``, ``CHANGELOG.md``) to the site, so neither is ever a stale copy.
"""

from __future__ import annotations

import importlib.util
import posixpath
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent

INCLUDED = {
    "benchmarks/index.md": "benchmarks/README.md",
    "benchmarks/results.md": "benchmarks/results.md",
    "production/collector.md": "collector/README.md",
    "changelog.md": "CHANGELOG.md",
}
"""Site page → the repository file it shows."""

_LINK = re.compile(r"\]\(([^)#\s:]+)(#[^)\s]*)?\)")


def _gen_ref() -> Any:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location("docs_gen_ref", ROOT / "docs" / "gen_ref.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def site_text(page: str, source: str) -> str:
    """The text of the repository file ``source`` as the site page ``page``: its relative
    links to files the site shows (a page of ``docs/``, another included file) pointed at
    their place in the site."""
    shown = {source_path: site for site, source_path in INCLUDED.items()}
    here = posixpath.dirname(source)

    def move(match: re.Match[str]) -> str:
        target = posixpath.normpath(posixpath.join(here, match.group(1)))
        if target in shown:
            site = shown[target]
        elif target.startswith("docs/"):
            site = target.removeprefix("docs/")
        else:
            return match.group(0)
        relative = posixpath.relpath(site, posixpath.dirname(page) or ".")
        return f"]({relative}{match.group(2) or ''})"

    return _LINK.sub(move, (ROOT / source).read_text(encoding="utf-8"))


def on_files(files: Files, config: Any) -> Files:
    for path, text in _gen_ref().pages().items():
        files.append(File.generated(config, path, content=text))
    for path, source in INCLUDED.items():
        files.append(File.generated(config, path, content=site_text(path, source)))
    return files
