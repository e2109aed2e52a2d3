"""The requests a real coding agent sends, for benchmark 10's captured-shape session.

``claude_code_request.json`` is the first request the Claude Code CLI pinned in
``tests/clients`` (2.1.332) sent to the stub upstream for ``claude -p 'stub:call Bash
…'``: its bytes as sent (compact JSON, non-ASCII text unescaped), three system blocks
(two with ``cache_control``), 12 tools, ``metadata.user_id`` (a JSON document in a string
holding the device and session ids), ``thinking``, ``context_management`` and a
``role: system`` message of its environment (the working directory, HOME's memory folder,
today's date). Its volatile values are placeholders, ``{{NAME}}``:
``SESSION_ID``, ``DEVICE_ID``, ``DATE``, ``CWD``, ``HOME``, ``PROJECT_SLUG``; it holds no
key (the CLI sends the key in a header).

A session grows from it as the CLI's does (its second request, captured alongside, shows
how): the environment message is resent as a plain string, each turn appends the model's
tool call (a line of text and a ``tool_use``) and the tool's result, and the one
``cache_control`` marker in the conversation moves to the newest tool result.

``codex_request.json`` is the first request the pinned Codex CLI sent to the stub for
``codex exec 'what does note.txt say?'`` (OpenAI Responses, streamed, 72 KB): its
``additional_tools`` item, developer and user messages, ``client_metadata`` (JSON text
with the turn's start time), ``prompt_cache_key``. Placeholders: ``ROOT`` (the folder
holding the project and ``CODEX_HOME``), ``DATE``, ``TURN_MS`` and ``CREATED`` (epoch
times), and ``ID_0`` … (each of its UUIDs, fresh per session). Each turn appends a
``custom_tool_call`` of its ``exec`` tool and the call's output, as its second request does.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from datetime import date as day
from pathlib import Path
from typing import Any

FIRST_REQUEST = Path(__file__).with_name("claude_code_request.json")
MESSAGES = "/v1/messages"
HEADERS = {
    "content-type": "application/json",
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
    "x-api-key": "sk-ant-placeholder-000",
    "user-agent": "claude-cli/2.1.332 (external, sdk-cli)",
}
"""The headers of the CLI's requests that the gateway reads (the key a placeholder)."""

CWD = "/home/dev/project"
HOME = "/home/dev"
DEVICE_ID = "5" * 64
_LINES = (
    "def handle(request: Request) -> Response:  # the café’s order — «déjà vu» → retry",
    '    """Read the order, check the stock, answer in the customer’s language."""',
    "    total = sum(item.price for item in order.items)  # 合計 (the total) in €",
    "    if not stock.has(order):  raise OutOfStock(order.id, 'naïve check ✓')",
    '    log.info("order %s: %d items, %.2f €", order.id, len(order.items), total)',
)


def first_request(session_id: str, date: str) -> dict[str, Any]:
    """The captured first request, ``session_id`` and ``date`` in their places."""
    text = FIRST_REQUEST.read_text(encoding="utf-8")
    values = {
        "SESSION_ID": session_id,
        "DEVICE_ID": DEVICE_ID,
        "DATE": date,
        "CWD": CWD,
        "HOME": HOME,
        "PROJECT_SLUG": CWD.replace("/", "-"),
    }
    for name, value in values.items():
        text = text.replace("{{" + name + "}}", value)
    body: dict[str, Any] = json.loads(text)
    return body


def _file(turn: int, size: int) -> str:
    """A tool's result: a numbered source listing, non-ASCII text in it as in real code."""
    lines: list[str] = []
    number = 1
    while sum(len(line) for line in lines) < size:
        lines.append(f"{number:>6}\t{_LINES[(turn + number) % len(_LINES)]} #{turn}.{number}\n")
        number += 1
    return "".join(lines)[:size]


def _turn(turn: int) -> list[dict[str, Any]]:
    """What one turn adds (~8 KB): the model's tool call and the tool's result."""
    call = f"toolu_{turn * 2654435761 % 16**16:016x}"
    says = f"Now I’ll read `module_{turn}.py` — it handles step {turn}."
    path = f"{CWD}/src/module_{turn}.py"
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": says},
                {"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": path}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "tool_use_id": call,
                    "type": "tool_result",
                    "content": _file(turn, 7800),
                    "is_error": False,
                }
            ],
        },
    ]


def session_bodies(session_id: str, date: str, turns: int) -> list[dict[str, Any]]:
    """The session's ``turns`` requests: the first as captured, each next one resending
    everything before it and adding a turn."""
    first = first_request(session_id, date)
    environment = first["messages"][1]
    resent = {"role": "system", "content": environment["content"][0]["text"]}
    history: list[dict[str, Any]] = []
    bodies = [first]
    for turn in range(1, turns):
        history += _turn(turn)
        last = history[-1]
        marked = {
            **last,
            "content": [{**last["content"][0], "cache_control": {"type": "ephemeral"}}],
        }
        messages = [first["messages"][0], resent, *history[:-1], marked]
        bodies.append({**first, "messages": messages})
    return bodies


CODEX_REQUEST = Path(__file__).with_name("codex_request.json")
RESPONSES = "/v1/responses"
CODEX_HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-placeholder"}
_ID = re.compile(r"\{\{ID_\d+\}\}")


def codex_first_request(seed: int, date: str) -> dict[str, Any]:
    """Codex's captured first request: its ids drawn from ``seed``, ``date`` its day."""
    draw = random.Random(seed)
    ids: dict[str, str] = {}
    text = _ID.sub(
        lambda m: ids.setdefault(m[0], str(uuid.UUID(int=draw.getrandbits(128), version=4))),
        CODEX_REQUEST.read_text(encoding="utf-8"),
    )
    started = (day.fromisoformat(date) - day(1970, 1, 1)).days * 86_400_000 + 36_000_000
    values = {"ROOT": HOME, "DATE": date, "TURN_MS": str(started)}
    values["CREATED"] = f"{started / 1000 + 0.25:.7f}"
    for name, value in values.items():
        text = text.replace("{{" + name + "}}", value)
    body: dict[str, Any] = json.loads(text)
    return body


def codex_session_bodies(seed: int, date: str, turns: int) -> list[dict[str, Any]]:
    """Codex's session of ``turns`` requests: each next one adds a call of its ``exec``
    tool and the call's output, and writes its ``client_metadata`` (a hash map) with its
    keys in another order, as the CLI does."""
    first = codex_first_request(seed, date)
    meta = first["input"][-1]["internal_chat_message_metadata_passthrough"]
    draw, order = random.Random(seed + 1), random.Random(seed + 2)
    metadata = list(first["client_metadata"].items())
    history: list[dict[str, Any]] = []
    bodies = [first]
    for turn in range(1, turns):
        call = f"call_{turn:04d}"
        script = f'const r = await tools.exec_command({{cmd: "cat src/module_{turn}.py"}});'
        history += [
            {
                "type": "custom_tool_call",
                "id": f"item_{turn:012x}_0",
                "status": "completed",
                "call_id": call,
                "name": "exec",
                "input": script + "\ntext(r.output);",
                "internal_chat_message_metadata_passthrough": {"turn_id": meta["turn_id"]},
            },
            {
                "type": "custom_tool_call_output",
                "id": f"ctco_{uuid.UUID(int=draw.getrandbits(128), version=4)}",
                "call_id": call,
                "output": [
                    {"type": "input_text", "text": "Script completed\nWall time 0.3 seconds\n"},
                    {"type": "input_text", "text": _file(turn, 7800)},
                ],
                "internal_chat_message_metadata_passthrough": {
                    "turn_id": meta["turn_id"],
                    "create_time": meta["create_time"] + turn,
                },
            },
        ]
        order.shuffle(metadata)
        bodies.append(
            {**first, "input": [*first["input"], *history], "client_metadata": dict(metadata)}
        )
    return bodies
