"""Debian's Chromium, headless, driven over the DevTools protocol (aiohttp's websocket
client): load a page, watch its console and network, run script in it, screenshot it.
The report tests and the report benchmark use it. Nothing is downloaded: the browser is
the system's ``chromium`` (``make test`` installs it when missing)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

__all__ = ["FLAGS", "Page", "browser_page", "chromium"]

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--window-size=1280,800",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
]


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        raise RuntimeError("chromium is not installed: `make test` installs it (apt-get)")
    return found


class Page:
    """One tab: every console error, exception and network request it made is kept."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.errors: list[str] = []
        self.requests: list[str] = []
        self._next = 0
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._events: dict[str, asyncio.Event] = {}
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        async for message in self.ws:
            data = json.loads(message.data)
            if "id" in data:
                future = self._waiting.pop(data["id"], None)
                if future is not None and not future.done():
                    future.set_result(data)
                continue
            method: str = data.get("method", "")
            params: dict[str, Any] = data.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                self.errors.append(json.dumps(params.get("args")))
            elif method == "Runtime.exceptionThrown":
                self.errors.append(json.dumps(params.get("exceptionDetails")))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                self.errors.append(params["entry"].get("text", ""))
            elif method == "Network.requestWillBeSent":
                self.requests.append(params["request"]["url"])
            self._events.setdefault(method, asyncio.Event()).set()

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[self._next] = future
        await self.ws.send_json({"id": self._next, "method": method, "params": params})
        reply = await asyncio.wait_for(future, 30)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return dict(reply.get("result", {}))

    async def open(self, url: str) -> None:
        for domain in ("Runtime", "Log", "Network", "Page"):
            await self.send(f"{domain}.enable")
        loaded = self._events.setdefault("Page.loadEventFired", asyncio.Event())
        loaded.clear()
        await self.send("Page.navigate", url=url)
        await asyncio.wait_for(loaded.wait(), 30)

    async def eval(self, expression: str) -> Any:
        reply = await self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in reply:
            raise RuntimeError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader

    async def key(self, key: str, code: str | None = None, keycode: int = 0) -> None:
        for kind in ("keyDown", "keyUp"):
            await self.send(
                "Input.dispatchKeyEvent",
                type=kind,
                key=key,
                code=code or key,
                windowsVirtualKeyCode=keycode,
            )

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))


@contextlib.asynccontextmanager
async def browser_page() -> AsyncIterator[Page]:
    """A fresh headless Chromium (own profile) and one of its tabs; stopped afterwards."""
    profile = tempfile.mkdtemp(prefix="otel-replay-chromium-")
    proc = subprocess.Popen(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("chromium did not start its DevTools endpoint")
            await asyncio.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/json/list") as reply:
                targets = await reply.json(content_type=None)
            target = next(t for t in targets if t.get("type") == "page")
            async with session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                page = Page(ws)
                try:
                    yield page
                finally:
                    await page.close()
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
