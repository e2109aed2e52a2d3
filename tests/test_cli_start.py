"""How the command line starts: only what a command needs is imported, and ``record`` /
``replay`` start the agent before the gateway is built — what the agent sends meanwhile
waits in the port's backlog and is served, over HTTP and over the gRPC port alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from test_cli import run

# what the gateway, the session and the trace codecs pull in
HEAVY = (
    "aiohttp",
    "grpc",
    "google.protobuf",
    "re2",
    "otel_replay.session.session",
    "otel_replay.gateway.app",
    "otel_replay.matching.matcher",
    "otel_replay.readers",
)

# an agent whose first act is an OTLP/HTTP export, sent before the gateway can be built
EXPORT_AT_ONCE = """
import json, os, urllib.request
span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
        "name": "agent", "kind": 1, "startTimeUnixNano": "1", "endTimeUnixNano": "2"}
body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
url = os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
print(urllib.request.urlopen(request, timeout=60).status)
"""

# an agent exporting its span with the official OTLP/gRPC exporter
EXPORT_GRPC = """
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
with provider.get_tracer("agent").start_as_current_span("agent"):
    pass
provider.shutdown()
"""


def imported_by(code: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    probe = f"import sys\n{code}\nprint(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return list(json.loads(out.stdout.replace("'", '"')))


def test_parsing_a_command_imports_no_gateway_session_or_codec():
    parse = (
        "from otel_replay.frontends import cli\n"
        "cli._parser().parse_args(['replay', '--cassette', 'c.json', '--mode', 'strict'])"
    )
    assert imported_by(parse) == []
    # a gateway built later imports them all (the probe above can see them)
    assert "aiohttp" in imported_by("import otel_replay.gateway.app")


def test_the_session_is_opened_before_any_server_code_is_imported():
    # what the agent waits for: the session and the ports, not the servers or the readers
    server = ("asyncio", "aiohttp", "grpc", "otel_replay.readers", "otel_replay.gateway.app")
    code = "import otel_replay.frontends.cli, otel_replay.gateway.runner"
    assert imported_by(code, server) == []
    # nor protobuf: the OTLP messages come with the first span written or received
    opened = (
        "import otel_replay.gateway.runner as r, sys\n"
        "r.open_session(r.GatewayConfig(mode='record', cassette=None, environ={}))"
    )
    assert imported_by(opened, ("google.protobuf", "opentelemetry.proto")) == []


def test_a_run_with_no_traffic_ends_with_the_same_summary_and_files(tmp_path):
    cassette, report = tmp_path / "c.json", tmp_path / "run.json"
    rec = run(["record", "--cassette", str(cassette), "--", "true"])
    assert rec.returncode == 0, rec.stderr
    assert "otel-replay: 0 replayed · 0 live · 0 misses · 0 spans received" in rec.stderr
    assert json.loads(cassette.read_text())["interactions"] == []
    rep = run(["replay", "--cassette", str(cassette), "--report", str(report), "--", "false"])
    assert rep.returncode == 1, rep.stderr
    assert json.loads(report.read_text())["replayed"] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "run.json"]


def test_what_the_agent_sends_before_the_gateway_is_built_is_served(tmp_path):
    cassette = tmp_path / "c.json"
    rec = run(["record", "--cassette", str(cassette), "--", sys.executable, "-c", EXPORT_AT_ONCE])
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.strip() == "200"
    assert "0 live · 0 misses · 1 span received" in rec.stderr


def test_the_grpc_port_reaches_the_receiver(tmp_path):
    cassette = tmp_path / "c.json"
    grpc = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TIMEOUT": "30"}
    rec = run(
        ["record", "--cassette", str(cassette), "--", sys.executable, "-c", EXPORT_GRPC], grpc
    )
    assert rec.returncode == 0, rec.stderr
    assert "0 live · 0 misses · 1 span received" in rec.stderr


def test_a_gateway_that_fails_after_the_agent_started_fails_the_agent_and_the_run(
    tmp_path, monkeypatch, capsys
):
    from otel_replay.core.errors import ConfigError
    from otel_replay.frontends.cli import main
    from otel_replay.gateway import runner

    async def fail(self: object, listening: object) -> None:
        raise ConfigError("cannot bind the OTLP/gRPC receiver to 127.0.0.1:0")

    monkeypatch.setattr(runner.GatewayServer, "_start", fail)
    agent = (
        "import os, urllib.request\n"
        "try:\n"
        "    urllib.request.urlopen(os.environ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'], b'{}')\n"
        "except OSError as exc:\n"
        "    print('refused:', type(exc).__name__)\n"
    )
    out = tmp_path / "agent.txt"
    command = ["sh", "-c", f'"$0" -c "$1" > {out}', sys.executable, agent]
    code = main(["record", "--cassette", str(tmp_path / "c.json"), "--", *command])
    assert code == 2
    assert out.read_text().startswith("refused: ")
    assert capsys.readouterr().err == (
        "otel-replay: cannot bind the OTLP/gRPC receiver to 127.0.0.1:0\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.txt"]


# a run whose agent makes a model call and exports its span over OTLP/HTTP
HTTP_ONLY_RUN = """
import json, sys, tempfile, urllib.request
from pathlib import Path
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.testing.stub import run_stub
with run_stub() as stub, tempfile.TemporaryDirectory() as tmp:
    config = GatewayConfig(mode="record", cassette=Path(tmp) / "c.json",
                           upstream_openai=stub.openai_url, environ={})
    gateway = GatewayThread(config).start(early=True)
    env = gateway.env
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    call = urllib.request.Request(env["OPENAI_BASE_URL"] + "/chat/completions", body.encode(),
                                  {"Content-Type": "application/json"})
    urllib.request.urlopen(call, timeout=60).read()
    span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
            "name": "agent", "kind": 1, "startTimeUnixNano": "1", "endTimeUnixNano": "2"}
    doc = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    export = urllib.request.Request(env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], doc,
                                    {"Content-Type": "application/json"})
    assert urllib.request.urlopen(export, timeout=60).status == 200
    print(gateway.stop().line(), file=sys.stderr)
"""


def test_a_run_that_exports_no_grpc_never_loads_the_grpc_receiver():
    loaded = imported_by(HTTP_ONLY_RUN, ("grpc", "otel_replay.otlp.grpc", "google.protobuf"))
    assert loaded == ["google.protobuf"]  # the OTLP/HTTP export needs protobuf, not gRPC


def test_model_calls_are_served_while_the_grpc_receiver_still_loads(tmp_path, monkeypatch):
    """The gRPC receiver starts at the first gRPC connection (gRPC and protobuf take tens
    of ms to load): a model call is answered while it loads, and exports sent meanwhile,
    to the gRPC port and as gRPC on the HTTP port, wait for it and are stored."""
    import asyncio
    import threading
    import urllib.request

    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from otel_replay.core import lazy
    from otel_replay.gateway.runner import GatewayConfig, GatewayThread
    from otel_replay.testing.stub import run_stub

    release, loading = threading.Event(), threading.Event()
    load = lazy.import_meanwhile

    async def held(*names: str) -> None:
        if names == ("otel_replay.otlp.grpc",):
            loading.set()
            await asyncio.get_running_loop().run_in_executor(None, release.wait, 60)
        await load(*names)

    monkeypatch.setattr(lazy, "import_meanwhile", held)

    def export(endpoint: str, name: str) -> None:
        provider = TracerProvider()
        exporter = OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=60)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        with provider.get_tracer("agent").start_as_current_span(name):
            pass
        provider.shutdown()

    with run_stub() as stub:
        config = GatewayConfig(
            mode="record", cassette=tmp_path / "c.json", upstream_openai=stub.openai_url
        )
        gateway = GatewayThread(config).start(early=True)
        try:
            env = gateway.env
            http = env["OTEL_REPLAY_URL"].rsplit(":", 1)[1]
            targets = [f"127.0.0.1:{env['OTEL_REPLAY_GRPC_PORT']}", f"127.0.0.1:{http}"]
            exports = [
                threading.Thread(target=export, args=(target, f"span{i}"))
                for i, target in enumerate(targets)
            ]
            for thread in exports:
                thread.start()
            body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
            call = urllib.request.Request(
                env["OPENAI_BASE_URL"] + "/chat/completions",
                body.encode(),
                {"Content-Type": "application/json", "Authorization": "Bearer sk-test"},
            )
            assert loading.wait(60)
            with urllib.request.urlopen(call, timeout=60) as answer:
                assert answer.status == 200
            assert not release.is_set() and all(t.is_alive() for t in exports)
            release.set()
            for thread in exports:
                thread.join(60)
        finally:
            release.set()
            summary = gateway.stop()
    assert summary.line().endswith("1 live · 0 misses · 2 spans received"), summary.line()


def test_a_grpc_receiver_that_cannot_start_fails_the_run(tmp_path, monkeypatch):
    """Started at the first gRPC connection, a receiver that fails refuses that export
    and the run ends failed, saying why (the model calls were served all along)."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from otel_replay.gateway import runner

    async def fail(self: object, host: str, port: int) -> int:
        raise OSError("no file descriptors left")

    monkeypatch.setattr(runner.GatewayServer, "_start_grpc", fail)
    config = runner.GatewayConfig(mode="record", cassette=tmp_path / "c.json", environ={})
    gateway = runner.GatewayThread(config).start(early=True)
    try:
        provider = TracerProvider()
        endpoint = f"127.0.0.1:{gateway.env['OTEL_REPLAY_GRPC_PORT']}"
        exporter = OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=2)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        with provider.get_tracer("agent").start_as_current_span("agent"):
            pass
        provider.shutdown()
    finally:
        summary = gateway.stop()
    assert summary.failed and "0 spans received" in summary.line()
    (error,) = summary.write_errors
    assert error.startswith("the OTLP/gRPC receiver did not start (no file descriptors left)")


def test_the_cassette_is_indexed_on_the_gateways_thread(tmp_path, monkeypatch):
    """Opening a replay session loads and checks the cassette but leaves its index to the
    gateway, which builds it while the agent starts; a run that sends nothing never
    builds it and reports every recording unused."""
    import threading

    import openai

    from otel_replay.gateway import runner
    from otel_replay.matching.matcher import Matcher
    from otel_replay.testing.stub import run_stub

    cassette = tmp_path / "c.json"
    with run_stub() as stub:
        config = runner.GatewayConfig(
            mode="record", cassette=cassette, upstream_openai=stub.openai_url, environ={}
        )
        with runner.GatewayThread(config) as gateway:
            client = openai.OpenAI(base_url=gateway.env["OPENAI_BASE_URL"], api_key="sk-x")
            for word in ("one", "two"):
                client.embeddings.create(model="text-embedding-3-small", input=word)
    built: list[str] = []
    index = Matcher.for_exchanges.__func__  # type: ignore[attr-defined]

    def for_exchanges(cls: type[Matcher], *args: object, **kw: object) -> Matcher:
        built.append(threading.current_thread().name)
        return index(cls, *args, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(Matcher, "for_exchanges", classmethod(for_exchanges))
    config = runner.GatewayConfig(mode="strict", cassette=cassette, environ={})
    session = runner.open_session(config)
    assert built == [] and session.finish().unused == [0, 1]
    with runner.GatewayThread(config) as gateway:
        assert gateway.server is not None
    assert built == ["otel-replay-gateway"]


def test_serve_answers_what_is_sent_as_soon_as_its_environment_is_printed(tmp_path):
    # `serve` too prints its env line before the gateway is built: what is sent at once
    # waits in the port's backlog and is served, and the end of stdin ends the run
    serve = subprocess.Popen(
        [sys.executable, "-m", "otel_replay", "serve", "--cassette", str(tmp_path / "c.json")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OTEL_REPLAY_MODE": "record"},
    )
    try:
        assert serve.stdout is not None and serve.stdin is not None
        env = json.loads(serve.stdout.readline())["env"]
        agent = subprocess.run(
            [sys.executable, "-c", EXPORT_AT_ONCE],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert agent.stdout.strip() == "200"
        serve.stdin.close()
        summary = json.loads(serve.stdout.readline())["summary"]
        assert serve.wait(60) == 0
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
        for stream in (serve.stdout, serve.stderr):
            if stream is not None:
                stream.close()
    assert summary["spans_received"] == 1
