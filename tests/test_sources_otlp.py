"""``build --from tempo+…`` (and the faults of ``jaeger+…`` a real Jaeger cannot be made
to show): a real agent's trace, as Tempo answers it (fixtures in its documented shapes,
served over loopback), becomes a cassette the same agent replays strictly with its
upstream gone; and a backend that cannot answer is one line naming it, exit 2. Jaeger v2
itself is run for real in ``test_sources_jaeger.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web
from backend_checks import one_line, otel_replay, replays_offline
from backend_servers import SEEN, fixture_trace_id, jaeger_app, serving, tempo_app

from otel_replay.cassette.model import load


def build_trace(address: str, out: Path, trace_id: str | None = None, **env: str):
    """``build --from address --trace-id … -o out``."""
    trace = trace_id or fixture_trace_id()
    return otel_replay("build", "--from", address, "--trace-id", trace, "-o", str(out), **env)


@pytest.mark.parametrize(
    ("backend", "app"),
    [
        ("tempo", lambda: tempo_app("v2", protobuf=False)),
        ("tempo", lambda: tempo_app("v2", protobuf=True)),
        ("tempo", lambda: tempo_app("v1", protobuf=False)),
        ("tempo", lambda: tempo_app("v1", protobuf=True)),
    ],
    ids=["tempo-v2-json", "tempo-v2-protobuf", "tempo-v1-json", "tempo-v1-protobuf"],
)
def test_a_trace_from_the_backend_replays_offline(tmp_path, backend, app):
    out = tmp_path / "incident.json"
    with serving(app()) as url:
        done = build_trace(f"{backend}+{url}", out)
    assert done.returncode == 0, done.stderr
    assert "2 interactions" in done.stderr
    cassette = load(out)
    assert cassette.source["from"] == f"{backend} at {url}"
    assert {i.trace_id for i in cassette.interactions} == {fixture_trace_id()}
    replays_offline(out)


def test_tempo_searches_then_writes_one_cassette_per_trace(tmp_path):
    app = tempo_app("v2", protobuf=True)
    folder = tmp_path / "incidents"
    with serving(app) as url:
        done = otel_replay(
            "build", "--from", f"tempo+{url}", "--service", "weather-agent", "-o", f"{folder}/"
        )
    assert done.returncode == 0, done.stderr
    (search,) = app[SEEN]
    assert search["q"] == '{ resource.service.name = "weather-agent" }'
    (cassette,) = folder.iterdir()
    assert cassette.name == f"{fixture_trace_id()}.json"
    replays_offline(cassette)


def _refusing() -> web.Application:
    async def refuse(request: web.Request) -> web.Response:
        return web.Response(status=401, text="invalid token")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", refuse)
    return app


def test_refused_credentials_are_one_line_exit_2(tmp_path):
    with serving(_refusing()) as url:
        line = one_line(build_trace(f"tempo+{url}", tmp_path / "x.json"))
    assert line.startswith(
        f"otel-replay: tempo at {url}: refused the credentials (HTTP 401: invalid token)"
    )
    assert "OTEL_REPLAY_FROM_HEADERS" in line


def test_headers_from_the_environment_reach_the_backend(tmp_path):
    out = tmp_path / "x.json"
    header = "Authorization=Bearer%20s3cret"
    with serving(jaeger_app(token="s3cret")) as url:
        done = build_trace(f"jaeger+{url}", out, OTEL_REPLAY_FROM_HEADERS=header)
        refused = build_trace(f"jaeger+{url}", out)
    assert done.returncode == 0, done.stderr
    assert "refused the credentials" in one_line(refused)


def test_an_answer_that_breaks_off_is_one_line_exit_2(tmp_path):
    async def cut(request: web.Request) -> web.StreamResponse:
        answer = web.StreamResponse(headers={"Content-Length": "100000"})
        await answer.prepare(request)
        await answer.write(b'{"result": {"resourceSpans": [')
        assert request.transport is not None
        request.transport.close()
        return answer

    app = web.Application()
    app.router.add_get("/api/v3/traces/{trace_id}", cut)
    with serving(app) as url:
        line = one_line(build_trace(f"jaeger+{url}", tmp_path / "x.json"))
    assert line.startswith(f"otel-replay: jaeger at {url}: the answer broke off (")


def test_a_redirect_is_not_followed_with_the_credentials(tmp_path):
    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPFound("http://127.0.0.2:9/elsewhere")

    app = web.Application()
    app.router.add_get("/api/v2/traces/{trace_id}", moved)
    header = "Authorization=Bearer%20s3cret"
    with serving(app) as url:
        done = build_trace(f"tempo+{url}", tmp_path / "x.json", OTEL_REPLAY_FROM_HEADERS=header)
    assert one_line(done) == (
        f"otel-replay: tempo at {url}: HTTP 302: redirected to http://127.0.0.2:9/elsewhere;"
        " give that address"
    )


def test_an_unreachable_backend_is_one_line_exit_2(tmp_path):
    with serving(web.Application()) as url:
        pass  # the port is free again: nothing listens there
    done = build_trace(f"jaeger+{url}", tmp_path / "x.json")
    assert one_line(done) == f"otel-replay: jaeger at {url}: unreachable (connection refused)"


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("zipkin+http://127.0.0.1:9411", "unknown backend"),
        ("jaeger://127.0.0.1:16686", "unknown backend"),
        ("tempo+ftp://127.0.0.1:3200", "not an http(s) address"),
        ("clickhouse+http://u:hunter2@127.0.0.1:port", "--from"),
    ],
)
def test_a_bad_address_is_one_line_exit_2(tmp_path, address, says):
    done = otel_replay("build", "--from", address, "-o", str(tmp_path / "x.json"))
    line = one_line(done)
    assert says in line
    assert "hunter2" not in line


def test_one_cassette_per_trace_is_for_a_backend(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text("")
    line = one_line(otel_replay("build", str(trace), "-o", f"{tmp_path}/"))
    assert (
        line == f"otel-replay: -o {tmp_path}: a directory; a build from files writes one cassette"
    )


def test_files_and_a_backend_together_are_refused(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text("")
    done = otel_replay(
        "build", str(trace), "--from", "jaeger+http://127.0.0.1:9", "-o", str(tmp_path / "x.json")
    )
    assert "give trace files or --from SOURCE" in one_line(done)
