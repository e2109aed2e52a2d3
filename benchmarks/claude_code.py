"""``python -m benchmarks.claude_code [RUNS]``: what otel-replay adds to a real Claude Code
run (the CLI pinned in tests/clients, installed by ``make clients``).

One tool turn (two model calls) against the stub upstream, ``RUNS`` times each: bare
(Claude Code straight to the stub), through a bare aiohttp proxy in front of the stub
(what any proxy built on aiohttp adds: the floor under record), recorded through
otel-replay, replayed strictly (in the directory and HOME it was recorded in, and, as CI
replays a recording made on a developer's machine, in another directory with another
HOME). It
prints the wall time of the whole run (bare: Claude Code alone, telemetry off) and, for
the run's first and second model calls each, the duration and time to first token Claude
Code itself reports in its ``api_request`` events (for the bare figures a second run
sends its telemetry to a gateway while its model calls go straight to the stub).
Not part of ``python -m benchmarks``: it needs the npm CLI and takes about a minute.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import Server, installed_env
from otel_replay.testing.stub import run_stub

ROOT = Path(__file__).resolve().parent.parent
CLAUDE = ROOT / ".venv" / "clients" / "node_modules" / ".bin" / "claude"
CLI = [sys.executable, "-m", "otel_replay"]
TURN = ["-p", 'stub:call Bash {"command": "cat note.txt"}', "--allowedTools", "Bash(cat note.txt)"]


def _environment(home: Path) -> dict[str, str]:
    own = ("CLAUDE", "ANTHROPIC_", "OTEL_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(own)}
    return {
        **env,
        "HOME": str(home),
        "ANTHROPIC_API_KEY": "sk-ant-placeholder-000",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "OTEL_LOGS_EXPORTER": "otlp",
    }


def _calls(logs: Path) -> list[tuple[float, float]]:
    """(duration_ms, ttft_ms) of each ``api_request`` event in a log file."""
    found = []
    for line in logs.read_text(encoding="utf-8").splitlines():
        for resource in json.loads(line).get("resourceLogs", []):
            for scope in resource.get("scopeLogs", []):
                for record in scope.get("logRecords", []):
                    attrs = {
                        a["key"]: next(iter(a["value"].values()))
                        for a in record.get("attributes", [])
                    }
                    if attrs.get("event.name") == "api_request":
                        found.append((float(attrs["duration_ms"]), float(attrs["ttft_ms"])))
    return found


def _run(args: list[str], folder: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=folder, env=env, check=True, capture_output=True, timeout=120)
    return time.perf_counter() - start


def main(runs: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="otel-replay-bench-"))
    (folder / "note.txt").write_text("the answer is 42\n")
    env = installed_env(folder / "pycache", _environment(folder / "home"))
    env["PYTHONPATH"] = str(ROOT)  # this tree's package, not the one installed
    cassette = folder / "c.json"
    # replayed elsewhere: another directory and HOME, as CI replays a developer's recording
    elsewhere = folder / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "note.txt").write_text("the answer is 42\n")
    env_elsewhere = {**env, "HOME": str(elsewhere / "home")}
    kinds = ("bare", "proxy", "record", "replay", "replay elsewhere")
    wall: dict[str, list[float]] = {kind: [] for kind in kinds}
    calls: dict[str, list[list[tuple[float, float]]]] = {kind: [] for kind in kinds}

    def timed(
        kind: str, i: int, *args: str, where: Path = folder, environ: dict[str, str] = env
    ) -> float:
        name = kind.replace(" ", "-")
        traces = folder / f"{name}{i}.jsonl"
        took = _run([*CLI, *args[:1], "--traces", str(traces), *args[1:]], where, environ)
        if i >= 0:  # round -1 writes the byte code, as installing a package does
            calls[kind].append(_calls(folder / f"{name}{i}.logs.jsonl"))
        return took

    strict = ["--mode", "strict", "--cassette", str(cassette)]
    with run_stub() as stub, Server(kind="proxy", upstream=stub.url) as proxy:
        quiet = {**env, "ANTHROPIC_BASE_URL": stub.url, "CLAUDE_CODE_ENABLE_TELEMETRY": "0"}
        direct = ["env", f"ANTHROPIC_BASE_URL={stub.url}", str(CLAUDE), *TURN]
        proxied = ["env", f"ANTHROPIC_BASE_URL={proxy.url}", str(CLAUDE), *TURN]
        upstream = ["--upstream-anthropic", stub.url]
        # the three kinds take turns in every round, so each samples the same moments of
        # a noisy machine (the replays play round -1's recording)
        for i in range(-1, runs):
            wall["bare"].append(_run([str(CLAUDE), *TURN], folder, quiet))
            # the model calls straight to the stub, the telemetry to a gateway
            timed("bare", i, "record", "--cassette", str(folder / "bare.json"), "--", *direct)
            # the same, its model calls through the bare proxy (its wall time too)
            wall["proxy"].append(
                timed("proxy", i, "record", "--cassette", str(folder / "p.json"), "--", *proxied)
            )
            recording = cassette if i < 0 else folder / f"record{i}.json"
            record = ["record", "--cassette", str(recording), *upstream]
            wall["record"].append(timed("record", i, *record, "--", str(CLAUDE), *TURN))
            replay = ["replay", *strict, "--", str(CLAUDE), *TURN]
            wall["replay"].append(timed("replay", i, *replay))
            wall["replay elsewhere"].append(
                timed("replay elsewhere", i, *replay, where=elsewhere, environ=env_elsewhere)
            )
    for kind in wall:
        del wall[kind][0]  # round -1
        # a run's first call (the tool request) and its second (the answer) differ
        # several-fold: each is summed up on its own
        parts = []
        for n, name in enumerate(("first call", "second call")):
            nth = [run[n] for run in calls[kind] if len(run) > n]
            durations, ttfts = [c[0] for c in nth], [c[1] for c in nth]
            parts.append(
                f"{name} {statistics.median(durations):5.1f} ms (first token "
                f"{statistics.median(ttfts):4.1f})"
            )
        print(f"{kind:16s} run p50 {statistics.median(wall[kind]):5.2f} s · " + " · ".join(parts))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
