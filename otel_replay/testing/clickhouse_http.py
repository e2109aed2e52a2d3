"""ClickHouse's HTTP interface in front of chDB (ClickHouse in process), for tests and
benchmarks where no ClickHouse server installs.

Run with an interpreter that has ``chdb`` (``running`` does, from any other):
``python clickhouse_http.py DATA_DIR [--schema FILE] [--user U --password P]``; it prints
``{"port": N}`` once it listens on 127.0.0.1 and serves until stdin closes. Like
ClickHouse: the query is the ``query`` parameter followed by the body (or the body alone),
``database`` names the default database, credentials come as basic auth or
``X-ClickHouse-User`` / ``X-ClickHouse-Key``, an answer streams as chDB makes it, and an
error is ``Code: N. DB::Exception: …`` with ``X-ClickHouse-Exception-Code`` and the HTTP
status ClickHouse gives it (403 for refused credentials, 404 for an unknown table or
database, 400 for bad SQL, else 500). Standard library and chDB only: it runs outside the
project's environment.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

_CODE = re.compile(r"Code: (\d+)\.")
_STATUS = {516: 403, 60: 404, 81: 404, 62: 400}
_READS = re.compile(r"\s*(SELECT|WITH)\b", re.IGNORECASE)


def serve(path: str, schema: str | None, user: str, password: str) -> None:
    from chdb import session

    db = session.Session(path)
    lock = threading.Lock()
    if schema:
        with open(schema, encoding="utf-8") as handle:
            text = "\n".join(x for x in handle if not x.lstrip().startswith("--"))
            for statement in text.split(";"):
                if statement.strip():
                    db.query(statement)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _answer(self) -> None:
            params = {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query).items()}
            size = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(size).decode() if size else ""
            if not self._allowed(params):
                message = (
                    f"Code: 516. DB::Exception: {self._user(params)}: Authentication failed: "
                    "password is incorrect, or there is no user with such name. "
                    "(AUTHENTICATION_FAILED)"
                )
                return self._error(516, message)
            sql = "\n".join(part for part in (params.get("query", ""), body) if part)
            with lock:
                try:
                    db.query(f"USE `{params.get('database', 'default')}`")
                    if not _READS.match(sql):  # chDB streams only SELECTs
                        return self._whole(db.query(sql, "TabSeparated").bytes())
                    stream = db.send_query(sql, "TabSeparated")
                    first = next(stream, None)
                except Exception as exc:  # chDB raises RuntimeError with ClickHouse's text
                    return self._failed(exc)
                self.send_response(200)
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Content-Type", "text/plain; charset=UTF-8")
                self.end_headers()
                try:
                    chunk = first
                    while chunk is not None:
                        self._chunk(chunk.bytes())
                        chunk = next(stream, None)
                except Exception as exc:  # after the answer began: as ClickHouse, in it
                    self._chunk(f"\n{_text(exc)}\n".encode())
                finally:
                    stream.close()
                self.wfile.write(b"0\r\n\r\n")

        def _whole(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _chunk(self, data: bytes) -> None:
            if data:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

        def _user(self, params: dict[str, str]) -> str:
            return self._credentials(params)[0]

        def _credentials(self, params: dict[str, str]) -> tuple[str, str]:
            auth = self.headers.get("Authorization", "")
            if auth.startswith("Basic "):
                name, _, key = base64.b64decode(auth[6:]).decode().partition(":")
                return name, key
            name = self.headers.get("X-ClickHouse-User") or params.get("user") or "default"
            return name, self.headers.get("X-ClickHouse-Key") or params.get("password") or ""

        def _allowed(self, params: dict[str, str]) -> bool:
            return self._credentials(params) == (user, password)

        def _failed(self, exc: Exception) -> None:
            text = _text(exc)
            found = _CODE.search(text)
            self._error(int(found.group(1)) if found else 1002, text)

        def _error(self, code: int, text: str) -> None:
            data = (text.strip() + "\n").encode()
            self.send_response(_STATUS.get(code, 500))
            self.send_header("X-ClickHouse-Exception-Code", str(code))
            self.send_header("Content-Type", "text/plain; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    try:
        while sys.stdin.readline():
            pass
    finally:
        server.shutdown()
        server.server_close()
        db.close()


class ClickHouse:
    """A running shim: ``url`` and the credentials it takes."""

    def __init__(self, url: str, user: str, password: str) -> None:
        self.url = url
        self._auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def query(self, sql: str, data: bytes = b"") -> bytes:
        """The answer to ``sql`` (with ``data`` after it, as an INSERT's rows)."""
        request = urllib.request.Request(
            f"{self.url}/?query={quote(sql)}",
            data=data or None,
            method="POST",
            headers={"Authorization": self._auth},
        )
        with urllib.request.urlopen(request, timeout=600) as answer:
            body: bytes = answer.read()
        return body

    def insert(self, table: str, rows: Iterable[dict[str, Any]]) -> None:
        """Rows into ``table``, as JSONEachRow."""
        data = "".join(json.dumps(row) + "\n" for row in rows).encode()
        self.query(f"INSERT INTO {table} FORMAT JSONEachRow", data)


@contextmanager
def running(
    python: Path, data_dir: Path, schema: Path, user: str, password: str
) -> Iterator[ClickHouse]:
    """The shim run by ``python`` (an interpreter with chDB) on a free loopback port,
    its data in ``data_dir``, ``schema`` run first; stopped at the end of the block."""
    if not python.exists():
        raise RuntimeError(f"chdb is not installed at {python}: run `make backends`")
    command = [str(python), __file__, str(data_dir / "chdb"), "--schema", str(schema)]
    shim = subprocess.Popen(
        [*command, "--user", user, "--password", password],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=data_dir,
        env={"TZ": "UTC", "HOME": str(data_dir), "PATH": "/usr/bin:/bin"},
        text=True,
    )
    assert shim.stdin is not None and shim.stdout is not None
    try:
        line = shim.stdout.readline()
        if not line:
            raise RuntimeError("the ClickHouse shim did not start")
        yield ClickHouse(f"http://127.0.0.1:{json.loads(line)['port']}", user, password)
    finally:
        shim.stdin.close()
        try:
            shim.wait(60)
        except subprocess.TimeoutExpired:
            shim.kill()
            shim.wait()
        shim.stdout.close()


def _text(exc: Exception) -> str:
    """ClickHouse's own message, without what chDB puts before it."""
    text = str(exc).strip()
    at = text.find("Code: ")
    return text[at:] if at > 0 else text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data", help="chDB's data directory")
    parser.add_argument(
        "--schema", help="SQL run at start (statements split on ';', -- comment lines left out)"
    )
    parser.add_argument("--user", default="default")
    parser.add_argument("--password", default="")
    args = parser.parse_args()
    serve(args.data, args.schema, args.user, args.password)
    return 0


if __name__ == "__main__":
    sys.exit(main())
