"""A child process that runs one framework's agents for the conformance suite.

``python framework_worker.py APP`` imports ``APP`` (a module beside this file, found
after the installed packages, so a framework named like a test helper is the framework)
and answers one JSON line per request line: ``{"base_url", "directory", "otlp",
"variant"}`` (telemetry to files in ``directory``, or over OTLP/HTTP to ``otlp``) →
the agent's outcome ``{"tool_calls", "answers"}`` (or ``{"error"}``). ``APP.agent(variant)``
returns ``run(base_url, traced_or_None)``; ``APP.instrumentors(variant)`` the
instrumentor factories to turn on while telemetry is wanted.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)


def main() -> None:
    sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != Path(HERE)] + [HERE]
    replies = os.fdopen(os.dup(1), "w")  # frameworks may print: stdout goes to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    app = importlib.import_module(sys.argv[1])
    from framework_agents import instrumented

    for line in sys.stdin:
        ask = json.loads(line)
        try:
            variant = ask["variant"]
            agent = instrumented(app.agent(variant), app.instrumentors(variant))
            directory = ask["directory"]
            outcome = agent(ask["base_url"], ask.get("otlp") or (directory and Path(directory)))
            answer = {"tool_calls": outcome.tool_calls, "answers": outcome.answers}
        except Exception:
            answer = {"error": traceback.format_exc()}
        replies.write(json.dumps(answer) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
