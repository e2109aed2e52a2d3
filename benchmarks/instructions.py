"""``python -m benchmarks.instructions [--claude] [--identical] [--tree PATH]``: the
instructions a gateway replaying benchmark 10's session executes, beside a bare handler's,
counted by ``valgrind --tool=callgrind`` (not installed by ``make``: ``apt install
valgrind``). Counts do not move with the machine's load: two trees compared side by side
differ by what their code does, which timings on these noisy machines hide (a few percent
of a session's work is within their noise).

The Codex session (``--claude``: Claude Code's; ``--identical``: sent byte for byte as
recorded rather than with fresh values) is recorded once. Then a child process serves N
sessions from it on loopback, a replaying gateway (the tree at ``--tree``, by default
this one) or a bare aiohttp handler streaming the same answer, to an aiohttp client in the
same process, under callgrind with ``PYTHONHASHSEED=0``; the count for N = 2 less the
count for N = 1 is one session (its first request included), start-up and loading left
out. Both include the client's work, so their difference is what the gateway adds.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


async def _prepare(folder: Path, claude: bool, identical: bool) -> None:
    from benchmarks import session
    from benchmarks._common import Server, compact, send_each
    from otel_replay.cassette.model import dump, load

    shape = await (session.claude_code() if claude else session.codex())
    recorded = [compact(b) for b in shape.sessions(-1)]
    (folder / "answer").write_bytes(shape.answer)
    cassette = folder / "cassette.json"
    with Server(kind="bare", stream=folder / "answer") as bare:
        with Server(kind="gateway", mode="record", cassette=cassette, upstream=bare.url) as g:
            await send_each(g.url, recorded, shape.route)
    once = load(cassette)
    dump(replace(once, interactions=once.interactions * 3), cassette)
    for n in range(2):
        bodies = recorded if identical else [compact(b) for b in shape.sessions(n + 1)]
        (folder / f"session{n}.json").write_text(json.dumps([b.decode() for b in bodies]))
    (folder / "route.json").write_text(json.dumps([shape.route.path, dict(shape.route.headers)]))


async def _serve(folder: Path, kind: str, sessions: int) -> None:
    """The child: ``sessions`` sessions sent to a gateway or a bare handler."""
    from aiohttp import ClientSession, web

    from otel_replay.gateway.runner import GatewayConfig, GatewayServer

    path, headers = json.loads((folder / "route.json").read_text())
    # encoded here, for N = 1 and N = 2 alike: what the client does per request is send
    loaded = [
        [body.encode() for body in json.loads((folder / f"session{n}.json").read_text())]
        for n in range(2)
    ]
    answer = (folder / "answer").read_bytes()

    async def bare(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        await response.write(answer)
        await response.write_eof()
        return response

    if kind == "gateway":
        server = GatewayServer(
            GatewayConfig(
                mode="strict",
                cassette=folder / "cassette.json",
                upstream_openai="http://127.0.0.1:9/v1",
                upstream_anthropic="http://127.0.0.1:9",
                environ={},
            )
        )
        await server.start()
        port = server.port

        async def stop() -> None:
            await server.stop()

    else:  # what benchmark 10's bare handler does
        app = web.Application(client_max_size=1024**3)
        app.router.add_route("*", "/{tail:.*}", bare)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        stop = runner.cleanup
    try:
        async with ClientSession() as client:
            for bodies in loaded[:sessions]:
                for body in bodies:
                    url = f"http://127.0.0.1:{port}{path}"
                    async with client.post(url, data=body, headers=headers) as r:
                        if r.status != 200:
                            raise SystemExit(f"{kind}: HTTP {r.status} for a replayed turn")
                        await r.read()
    finally:
        await stop()


def _count(folder: Path, tree: Path, kind: str, sessions: int) -> int:
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable]
    command += [__file__, "--child", str(folder), kind, str(sessions)]
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(tree)}  # its otel_replay
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=folder, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if f"otel_replay from {tree}" not in done.stderr:
        raise SystemExit(f"the child did not import the tree's otel_replay:\n{done.stderr[-2000:]}")
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind failed ({kind}, {sessions}):\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main(args: list[str]) -> None:
    if args[:1] == ["--child"]:
        import otel_replay  # the tree's (PYTHONPATH)

        print(f"otel_replay from {otel_replay.__file__}", file=sys.stderr)
        asyncio.run(_serve(Path(args[1]), args[2], int(args[3])))
        return
    tree = Path(args[args.index("--tree") + 1]).resolve() if "--tree" in args else ROOT
    claude, identical = "--claude" in args, "--identical" in args
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        asyncio.run(_prepare(folder, claude, identical))
        runs = [(kind, n) for kind in ("gateway", "bare") for n in (1, 2)]
        with ThreadPoolExecutor(2) as pool:
            found = pool.map(lambda run: _count(folder, tree, *run), runs)
            counts = dict(zip(runs, found, strict=True))
    gateway = counts["gateway", 2] - counts["gateway", 1]
    bare = counts["bare", 2] - counts["bare", 1]
    sent = "byte for byte" if identical else "fresh values"
    what = f"{'Claude Code' if claude else 'Codex'} session, {sent}"
    print(f"{what} ({tree}): instructions per session, client included")
    print(f"  gateway {gateway / 1e6:,.1f} M · bare handler {bare / 1e6:,.1f} M")
    print(f"  added {(gateway - bare) / 1e6:,.1f} M · ratio {gateway / bare:.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
