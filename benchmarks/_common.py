"""Shared pieces: servers in subprocesses, the client loops, the workload, result rows."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

from otel_replay import providers
from otel_replay.cassette.model import Cassette, dump
from otel_replay.core.exchange import Exchange, Response

ROOT = Path(__file__).resolve().parent.parent
CHAT = "/v1/chat/completions"

QUICK = False
"""Set by ``python -m benchmarks --quick``: every workload shrinks to a few requests, a
smoke test of the benchmark code itself (its figures mean nothing)."""

T = TypeVar("T")


def sized(full: T, quick: T) -> T:
    """A workload size: ``full`` for a real run, ``quick`` for ``--quick``."""
    return quick if QUICK else full


# --- results ----------------------------------------------------------------------------


@dataclass(slots=True)
class Row:
    """One line of the results table: a figure, its ratio to the baseline, the goal."""

    bench: str
    measure: str
    value: str
    baseline: str
    ratio: float | None
    goal: str = ""
    met: bool | None = None
    rounds: list[bool] | None = None
    """Whether the goal was met in each side-by-side round, when it is judged per round:
    then ``met`` is whether it was in at least ``MET_SHARE`` of them."""
    basis: str = ""
    """What the baseline is (``bare handler``, ``a bare aiohttp proxy's``)."""

    def __post_init__(self) -> None:
        if self.rounds:
            self.met = sum(self.rounds) >= MET_SHARE * len(self.rounds)
        if self.basis:
            self.baseline = f"{self.baseline} ({self.basis})"

    @property
    def ratio_text(self) -> str:
        """``0.12x``; a figure that added less than nothing (noise around zero) is signed
        as the value cells are, ``−0.00x``; ``-`` without a ratio."""
        if self.ratio is None:
            return "-"
        return f"{'−' if self.ratio < 0 else ''}{abs(self.ratio):.2f}x"

    @property
    def verdict(self) -> str:
        """``met``, ``missed`` or nothing; with the rounds met, ``met in 4 of 5``."""
        word = {True: "met", False: "missed", None: ""}[self.met]
        if self.rounds:
            word += f" in {sum(self.rounds)} of {len(self.rounds)}"
        return word


MET_SHARE = 0.6
"""A goal judged round by round is met when it is in this share of the rounds (3 of 5):
a shared machine's phase moves one round's figures more than the gateway does."""


@dataclass(slots=True)
class Results:
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *args: Any, **kwargs: Any) -> None:
        row = Row(*args, **kwargs)
        self.rows.append(row)
        verdict = row.verdict.upper() if row.met is False else row.verdict
        print(
            f"  {row.measure}: {row.value} vs {row.baseline} -> {row.ratio_text} {verdict}",
            flush=True,
        )


def installed_env(folder: Path, environ: dict[str, str]) -> dict[str, str]:
    """``environ`` as an installed package runs: byte code cached (in ``folder``, a
    ``PYTHONPYCACHEPREFIX``: warm it with one run first) whatever the caller's
    ``PYTHONDONTWRITEBYTECODE``, which would compile every module on every start."""
    env = {k: v for k, v in environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(folder)
    return env


def agent_child(
    folder: Path, *args: str, under: list[str] | None = None, what: str = "benchmark"
) -> Any:
    """Run ``folder/agent.py`` with ``args`` in a fresh process, as a user's agent runs
    (byte code cached; ``under``: a command it runs under), and return the JSON its last
    line prints (``{}`` when it prints nothing); its failure raises, naming ``what``."""
    env = installed_env(folder / "pycache", dict(os.environ))
    env.pop("CI", None)
    command = [*(under or []), sys.executable, str(folder / "agent.py"), *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{what}: {done.stderr[-2000:]}")
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


# --- servers ----------------------------------------------------------------------------


class Server:
    """A server in its own process (see ``benchmarks._server``)."""

    def __init__(self, tree: Path | None = None, **spec: Any) -> None:
        """``tree``: the source tree (a checkout of another commit) the server runs from;
        this one when None."""
        self.tree = tree
        self.spec = {k: (str(v) if isinstance(v, Path) else v) for k, v in spec.items()}
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.grpc_port: int | None = None
        self.final: dict[str, Any] = {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Server:
        environ = None if self.tree is None else {**os.environ, "PYTHONPATH": str(self.tree)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks._server", json.dumps(self.spec)],
            cwd=self.tree or ROOT,
            env=environ,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.kill()
            raise RuntimeError(f"server {self.spec['kind']} did not start")
        info = json.loads(line)
        self.port, self.grpc_port = info["port"], info.get("grpc_port")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.stdout is not None
        with self.proc.stdout:
            out = self.proc.stdout.read()
        self.proc.wait(timeout=300)
        if out.strip():
            self.final = json.loads(out.strip().splitlines()[-1])


# --- workload ---------------------------------------------------------------------------

SYSTEM = "You are a careful assistant. Answer briefly and cite the tool results you used."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def chat_body(n: int = 0, *, words: int = 40, stream: bool = False) -> dict[str, Any]:
    """A typical agent turn: system prompt, a tool round trip, a user question."""
    question = " ".join(f"word{i % 50}" for i in range(words))
    body: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"What is the weather in Paris? ({n})"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_abc123XYZ",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_abc123XYZ", "content": "18 C, light rain"},
            {"role": "user", "content": question},
        ],
        "tools": TOOLS,
        "temperature": 0.2,
        "max_tokens": 256,
    }
    if stream:
        body["stream"] = True
    return body


def chat_response(words: int = 60) -> dict[str, Any]:
    text = " ".join(f"answer{i}" for i in range(words))
    return {
        "id": "chatcmpl-9xYzAbC123",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 180, "completion_tokens": words, "total_tokens": 180 + words},
    }


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def chat_exchange(body: dict[str, Any], response: Response) -> Exchange:
    provider = providers.provider_for(CHAT, {})
    return Exchange(
        provider="openai",
        operation="chat",
        request=provider.canonical(CHAT, body),
        response=response,
        raw_request=body,
        stream=bool(body.get("stream")),
        start_ns=1_700_000_000_000_000_000,
        end_ns=1_700_000_000_500_000_000,
    )


def write_cassette(path: Path, interactions: list[Exchange]) -> Path:
    dump(Cassette(interactions=interactions, source={"otel_replay": "bench"}), path)
    return path


# --- client loops -----------------------------------------------------------------------


@dataclass(slots=True)
class Timing:
    latencies: list[float]
    wall: float

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.latencies)

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.wall


JSON = {"content-type": "application/json"}


async def post(
    session: aiohttp.ClientSession, url: str, data: bytes, headers: dict[str, str] = JSON
) -> bytes:
    async with session.post(url, data=data, headers=headers) as r:
        payload = await r.read()
        if r.status != 200:
            raise RuntimeError(f"{url}: HTTP {r.status}: {payload[:300]!r}")
        return payload


async def drive(call: Callable[[int], Awaitable[Any]], count: int, in_flight: int = 1) -> Timing:
    """``count`` calls with ``in_flight`` workers; per-call latency and total wall time."""
    latencies: list[float] = []
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        while next_index < count:
            i = next_index
            next_index += 1
            started = time.perf_counter()
            await call(i)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return Timing(latencies, time.perf_counter() - started)


def sender(
    session: aiohttp.ClientSession, url: str, bodies: list[bytes]
) -> Callable[[int], Awaitable[bytes]]:
    """A call for ``drive``: POST ``bodies[i]`` to ``url``."""

    def call(i: int) -> Awaitable[bytes]:
        return post(session, url, bodies[i])

    return call


@dataclass(frozen=True, slots=True)
class Route:
    """Where an agent's requests go and the headers they carry."""

    path: str = CHAT
    headers: dict[str, str] = field(default_factory=lambda: JSON)


async def send_each(url: str, bodies: list[bytes], route: Route = Route()) -> list[float]:
    """POST each body to ``url``'s chat path (``route``'s) in turn (one client,
    sequentially, as an agent does); the latency of each."""
    return (await send_turns([url], bodies, route))[0]


async def send_turns(
    urls: list[str], bodies: list[bytes], route: Route = Route()
) -> list[list[float]]:
    """``send_each`` for each of ``urls`` at once, turn by turn: each body goes to every
    url, in their order, before the next body goes to any, so the sessions sample the same
    moments of a noisy machine; the latencies of each url's session.

    The order stays the same at every turn, so each request comes right after another
    server's, as an agent's next request finds a server that has been idle meanwhile: a
    server's second request in a row is about 0.3 ms faster here (a process already
    awake), and turns taking turns at going first gave each turn to one side's favour."""
    latencies: list[list[float]] = [[] for _ in urls]
    async with client_session() as session:
        for data in bodies:
            for i, url in enumerate(urls):
                started = time.perf_counter()
                await post(session, url + route.path, data, route.headers)
                latencies[i].append(time.perf_counter() - started)
    return latencies


def client_session(limit: int = 32) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=limit))
