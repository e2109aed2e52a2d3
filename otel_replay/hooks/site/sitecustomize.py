"""Run by Python as it starts, in a process ``otel-replay record / replay -- CMD`` starts
(its folder is put first on ``PYTHONPATH``): hooks the agent's own tools when the run
replays them (``OTEL_REPLAY_TOOLS``), then runs the user's own ``sitecustomize``, found
further along the path, as Python would have."""

import os
import sys


def _hook_tools() -> None:
    if not os.environ.get("OTEL_REPLAY_URL"):
        return
    if os.environ.get("OTEL_REPLAY_TOOLS", "replay") == "live":
        return
    try:
        from otel_replay.hooks.install import install
    except ImportError:  # this Python has no otel-replay: its tools run as they are
        return
    install()


def _theirs() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or spec.origin == __file__:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    _hook_tools()
except Exception as exc:  # never stop the agent from starting
    print(f"otel-replay: the agent's tools are not hooked: {exc}", file=sys.stderr)
_theirs()
