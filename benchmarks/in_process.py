"""18. In process: a replayed call through ``ReplayTransport`` against the same call
through the gateway.

A fresh Python process, as a user's test run is one, records ``CALLS`` chat calls of the
openai SDK (distinct prompts, plain and streamed in turn) from the stub upstream through
the transport in record mode. Each round, another fresh process replays the cassette
strictly both ways at once, call by call in turn: an ``openai.OpenAI`` client on
``httpx2.Client(transport=ReplayTransport(...))``, and one on the SDK's own transport
pointed at a gateway started by ``otel_replay.replay`` (what the pytest plugin and the
Python API give a test otherwise), both replaying the same recordings. The figure is what
each way adds over the SDK answered the same bytes from memory (``httpx2.MockTransport``,
captured from a first replay: the SDK's own work, the floor of any replay in the caller's
process). *Goal*: the transport adds <= 0.5x what the gateway adds (met in 3 of 5 rounds).
Reference rows give the whole calls' medians: the SDK's own work (2-2.5 ms a plain call,
3.4-4 ms a streamed one on these machines) is more than half of the gateway's whole call,
so no replay could make a whole call cost half of it.
"""

from __future__ import annotations

import statistics
import tempfile
import textwrap
from pathlib import Path

from benchmarks._common import Results, agent_child, ms, sized

BENCH = "18 in process"
CALLS = sized(200, 6)
ROUNDS = sized(5, 1)

CHILD = textwrap.dedent(
    """
    import contextlib, json, statistics, sys, time

    import httpx2, openai

    import otel_replay
    from otel_replay.testing.stub import run_stub

    CALLS = int(sys.argv[3])
    BASE = "https://api.openai.com/v1"


    def ask(client, n):
        body = {
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You are a careful assistant. " * 60},
                {"role": "user", "content": f"question {n}"},
            ],
        }
        if n % 2:
            chunks = client.chat.completions.create(**body, stream=True)
            return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        return client.chat.completions.create(**body).choices[0].message.content


    cassette, how = sys.argv[1], sys.argv[2]
    if how == "record":
        with run_stub() as stub:
            upstreams = {"openai": stub.openai_url}
            with otel_replay.ReplayTransport(cassette, mode="record", upstreams=upstreams) as t:
                client = openai.OpenAI(
                    api_key="sk-bench", base_url=BASE, http_client=httpx2.Client(transport=t)
                )
                for n in range(CALLS):
                    ask(client, n)
    else:
        answers = []  # what each call is answered, as bytes: the SDK's floor replays them

        def captured(transport):
            def answer(request):
                response = transport.handle_request(request)
                answers.append((response.status_code, response.headers, response.read()))
                status, headers, body = answers[-1]
                return httpx2.Response(status, headers=headers, content=body)

            return httpx2.MockTransport(answer)

        with otel_replay.ReplayTransport(cassette, mode="strict") as first:
            captures = httpx2.Client(transport=captured(first))
            client = openai.OpenAI(api_key="sk-bench", base_url=BASE, http_client=captures)
            for n in range(CALLS):
                ask(client, n)
        ahead = iter(answers)

        def floor(request):
            status, headers, body = next(ahead)
            return httpx2.Response(status, headers=headers, content=body)

        times = {how: [[], []], "floor": [[], []]}
        with contextlib.ExitStack() as run:
            if how == "gateway":  # the SDK's variables point at it, as in a pytest block
                run.enter_context(otel_replay.replay(cassette, mode="strict"))
                client = openai.OpenAI(api_key="sk-bench", max_retries=0)
            else:
                t = run.enter_context(otel_replay.ReplayTransport(cassette, mode="strict"))
                client = openai.OpenAI(
                    api_key="sk-bench",
                    base_url=BASE,
                    http_client=httpx2.Client(transport=t),
                    max_retries=0,
                )
            memory = openai.OpenAI(
                api_key="sk-bench",
                base_url=BASE,
                http_client=httpx2.Client(transport=httpx2.MockTransport(floor)),
                max_retries=0,
            )
            for n in range(CALLS):
                for name, each in ((how, client), ("floor", memory)):
                    started = time.perf_counter()
                    ask(each, n)
                    times[name][n % 2].append(time.perf_counter() - started)
        print(json.dumps({k: [statistics.median(v) for v in vs] for k, vs in times.items()}))
    """
)


def _child(folder: Path, *args: str) -> dict[str, list[float]]:
    found: dict[str, list[float]] = agent_child(folder, *args, what="in-process benchmark")
    return found


async def run(results: Results) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "agent.py").write_text(CHILD)
        cassette = str(folder / "in_process.json")
        _child(folder, cassette, "record", str(CALLS))
        rounds = []
        for n in range(ROUNDS):  # each way in a process of its own, in turn
            ways = ("transport", "gateway") if n % 2 == 0 else ("gateway", "transport")
            rounds.append({how: _child(folder, cassette, how, str(CALLS)) for how in ways})
    for kind, label in enumerate(("plain", "streamed")):
        transport = [r["transport"]["transport"][kind] for r in rounds]
        gateway = [r["gateway"]["gateway"][kind] for r in rounds]
        floor = [
            statistics.median((r["transport"]["floor"][kind], r["gateway"]["floor"][kind]))
            for r in rounds
        ]
        results.add(
            BENCH,
            f"a replayed {label} chat call (openai SDK, strict), whole: through "
            f"ReplayTransport (the SDK's own work, answered from memory: "
            f"{ms(statistics.median(floor))}, a floor both share)",
            ms(statistics.median(transport)),
            ms(statistics.median(gateway)),
            statistics.median(t / g for t, g in zip(transport, gateway, strict=True)),
            "reference",
            basis="the same call through the gateway",
        )
    # what the replay costs over the SDK's own work, round by round: the goal
    added = [
        {how: statistics.median(r[how][how][k] - r[how]["floor"][k] for k in (0, 1)) for how in r}
        for r in rounds
    ]
    ratios = [a["transport"] / a["gateway"] for a in added]
    results.add(
        BENCH,
        "a replayed call (plain and streamed) through ReplayTransport: what it adds over the "
        "SDK answered from memory (httpx2.MockTransport)",
        _signed(statistics.median(a["transport"] for a in added)),
        _signed(statistics.median(a["gateway"] for a in added)),
        statistics.median(ratios),
        "<= 0.5x",
        rounds=[r <= 0.5 for r in ratios],
        basis="what the gateway adds",
    )


def _signed(seconds: float) -> str:
    return f"{'+' if seconds >= 0 else '−'}{ms(abs(seconds))}"
