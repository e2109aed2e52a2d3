"""Lists stored once per trace file (``spans.lists``, read back by ``readers.pieces``): a
span's list fields begin with the lists earlier spans wrote, its GenAI tool definitions
name the tools an earlier span wrote whole, and every reader gives the exact bodies back,
whatever the conversation does between calls."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from phoenix_server import phoenix_python
from test_trace_pieces import _exchange

from otel_replay.core import genai
from otel_replay.core.errors import TraceFormatError
from otel_replay.core.exchange import Exchange
from otel_replay.otlp.store import TraceStore
from otel_replay.pipeline.build import build
from otel_replay.redaction.redact import Redactor
from otel_replay.reports.spantree import load_spans
from otel_replay.spans import attributes as own
from otel_replay.spans.draft import RequestDraft
from otel_replay.spans.encode import exchange_to_trace_json
from otel_replay.spans.pieces import MIN_PIECE, Ledger

SECRET = "sk-proj-" + "A1b2C3d4" * 5
TRACES = Path(__file__).parent / "traces"


def _call(i: int, body: dict[str, Any]) -> Exchange:
    return _exchange(i, body, {"index": 0, "message": {"role": "assistant", "content": "ok"}})


def _store(path: Path) -> TraceStore:
    redactor = Redactor()
    return TraceStore(path, redact=redactor.json, redact_text=redactor.text)


def _write(path: Path, calls: list[Exchange], drafted: list[bool] | None = None) -> Path:
    """The calls' spans as a recording session stores them: through one ledger, a span's
    pieces and lists stored once its line is on disk as encoded; a call drafted ahead
    where ``drafted`` says so."""
    store, ledger = _store(path), Ledger()
    for n, ex in enumerate(calls):
        draft = None
        if drafted is not None and drafted[n]:
            draft = RequestDraft(ex.request, ex.raw_request, ledger)
        with ledger.storing() as kept:
            line, intact = store.own_line(exchange_to_trace_json(ex, ledger=ledger, draft=draft))
            kept.append(store.append_traces(line) and intact)
    store.close()
    return path


def _whole(path: Path, calls: list[Exchange]) -> Path:
    """The same calls' spans holding their bodies whole (older trace files)."""
    store = _store(path)
    for ex in calls:
        store.append_traces(store.traces_line(exchange_to_trace_json(ex)))
    store.close()
    return path


def _spans(path: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    spans = [r["resourceSpans"][0]["scopeSpans"][0]["spans"][0] for r in lines]
    return [{a["key"]: next(iter(a["value"].values())) for a in s["attributes"]} for s in spans]


# --- any conversation ---------------------------------------------------------------------

texts = st.sampled_from(
    [
        "hi",
        "read the notes",
        "x" * MIN_PIECE,
        'line one\nline "two" \\ é 日本 ' * 20,
        f"the key is {SECRET} " * 20,
        f"use {SECRET}",
    ]
)
messages = st.builds(
    lambda role, text, n: {"role": role, "content": text, "name": f"n{n}"},
    st.sampled_from(["user", "assistant", "tool"]),
    texts,
    st.integers(0, 3),
)
tool_lists = st.sampled_from(
    [
        [{"type": "function", "function": {"name": "read", "description": "Reads a file. " * 12}}],
        [
            {"type": "function", "function": {"name": f"t{i}", "description": f"tool {i}"}}
            for i in range(8)
        ],
    ]
)
steps = st.tuples(
    st.sampled_from(["add", "add", "edit", "swap", "drop", "tools", "metadata"]),
    messages,
    st.integers(0, 20),
    st.integers(0, 20),
    st.booleans(),  # resent as copies (a cassette's calls) rather than the same objects
)


def _session(first: list[dict[str, Any]], tools: list[Any], turns: list[Any]) -> list[Any]:
    """The bodies of a conversation: each turn resends the messages so far, after adding,
    editing, swapping or dropping one, or changing the tools or the metadata."""
    history, bodies = list(first), []
    metadata: dict[str, Any] = {"session": "s" * 100, "user": f"key {SECRET}", "turn": 0}
    for op, message, i, j, copied in turns:
        if op == "add":
            history.append(message)
        elif history and op == "edit":
            history[i % len(history)] = {**history[i % len(history)], "content": "edited"}
        elif history and op == "swap":
            a, b = i % len(history), j % len(history)
            history[a], history[b] = history[b], history[a]
        elif history and op == "drop":
            del history[i % len(history)]
        elif op == "tools":
            tools = [*tools, {"type": "function", "function": {"name": f"more{i}"}}]
        elif op == "metadata":
            metadata = {**metadata, "turn": i, "note": message["content"]}
        sent = copy.deepcopy(history) if copied else list(history)
        body = {"model": "gpt-4o", "messages": sent, "tools": tools, "metadata": metadata}
        bodies.append(body)
    return bodies


@settings(max_examples=25, deadline=None)
@given(
    st.lists(messages, min_size=1, max_size=3),
    tool_lists,
    st.lists(steps, min_size=1, max_size=8),
    st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_conversations_come_back_exactly(
    tmp_path_factory: pytest.TempPathFactory,
    first: list[Any],
    tools: list[Any],
    turns: list[Any],
    drafted: list[bool],
) -> None:
    """Messages resent, edited, swapped, dropped, tools changed, calls drafted ahead or
    not: ``build`` and the report read every body back as the same calls written whole
    give, and no secret reaches the file."""
    folder = tmp_path_factory.mktemp("lists")
    calls = [_call(i, body) for i, body in enumerate(_session(first, tools, turns))]
    listed = _write(folder / "l.jsonl", calls, drafted)
    whole = build([_whole(folder / "w.jsonl", calls)]).interactions
    assert build([listed]).interactions == whole
    shown = [n.exchange.raw_request for n in load_spans([listed]) if n.exchange is not None]
    assert shown == [ex.raw_request for ex in whole]
    assert SECRET not in listed.read_text()


# --- what the file holds ------------------------------------------------------------------

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{i}",
            "description": f"Does thing {i}.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    for i in range(12)
]


META = {"user_id": "user_" + "0123456789abcdef" * 8, "device": "laptop"}


def _conversation(turns: int, secret_at: int | None = None) -> list[Exchange]:
    history: list[dict[str, Any]] = [{"role": "system", "content": "Be brief. " * 40}]
    calls = []
    for turn in range(turns):
        text = f"step {turn}: " + "the file says hello. " * 20
        if turn == secret_at:
            text += f" my key is {SECRET}"
        history += [{"role": "user", "content": f"go {turn}"}, {"role": "tool", "content": text}]
        body = {"model": "gpt-4o", "messages": list(history), "tools": TOOLS, "metadata": META}
        calls.append(_call(turn, body))
    return calls


def test_each_span_holds_what_is_new_in_it(tmp_path: Path) -> None:
    calls = _conversation(6)
    listed = _write(tmp_path / "l.jsonl", calls)
    whole = _whole(tmp_path / "w.jsonl", calls)
    assert build([listed]).interactions == build([whole]).interactions
    spans = _spans(listed)
    templates = [json.loads(s[own.REQUEST_TEMPLATE]) for s in spans]
    assert len(templates[0]["messages"]) == 3 and len(templates[0]["tools"]) == 12
    assert templates[0]["metadata"] == META
    for template in templates[1:]:  # an earlier list's items, then the two new messages
        assert len(template["messages"]) == 3 and len(template["tools"]) == 1
        assert template["messages"][0].startswith(own.PIECE_MARKER)
        assert template["metadata"].startswith(own.PIECE_MARKER)  # the same object
    assert [s[own.FORMAT_ATTRIBUTE] for s in spans] == ["2"] + ["3"] * 5
    assert listed.stat().st_size < whole.stat().st_size / 2


def test_tools_are_named_once_written_whole(tmp_path: Path) -> None:
    """The first span holds the tool definitions whole; later ones each tool's type and
    name, as the conventions write them by default."""
    spans = _spans(_write(tmp_path / "l.jsonl", _conversation(3)))
    first, *later = [json.loads(s[genai.TOOL_DEFINITIONS]) for s in spans]
    assert [t["name"] for t in first] == [f"tool_{i}" for i in range(12)]
    assert all("parameters" in t and "description" in t for t in first)
    for tools in later:
        assert tools == [{"type": "function", "name": f"tool_{i}"} for i in range(12)]
    for span in spans:  # every message still an object of its own, in the parts form
        inputs = json.loads(span[genai.INPUT_MESSAGES])
        assert all(isinstance(m, dict) and isinstance(m["parts"], list) for m in inputs)


def test_a_secret_in_a_list_never_reaches_the_file(tmp_path: Path) -> None:
    """A message holding a secret is redacted in the line that writes it; that line's
    lists are not referred to (the line is not as encoded), so every later span writes
    the message again, redacted again: no reference carries the secret to disk."""
    calls = _conversation(5, secret_at=1)
    listed = _write(tmp_path / "l.jsonl", calls)
    text = listed.read_text()
    assert SECRET not in text
    built = build([listed]).interactions
    assert built == build([_whole(tmp_path / "w.jsonl", calls)]).interactions
    for ex in built[1:]:
        assert "[REDACTED" in json.dumps(ex.raw_request) and SECRET not in str(ex.raw_request)
    later = [json.loads(s[own.REQUEST_TEMPLATE]) for s in _spans(listed)[2:]]
    assert all(isinstance(t["messages"][1], dict) for t in later)  # written, not referred to


def _raise(exc: TraceFormatError) -> None:
    raise exc


def test_a_missing_list_names_the_file_and_the_span(tmp_path: Path) -> None:
    listed = _write(tmp_path / "l.jsonl", _conversation(3))
    rest = tmp_path / "rest.jsonl"
    rest.write_text("".join(listed.read_text().splitlines(keepends=True)[1:]))
    with pytest.raises(TraceFormatError) as caught:
        build([rest], on_error=_raise)
    assert str(caught.value).startswith(f"{rest}: span 0000000000000002 (chat gpt-4o): ")
    assert "refers to list" in str(caught.value)
    assert "read the whole trace file" in str(caught.value)
    with pytest.raises(TraceFormatError, match=rf"^{rest}: span 0000000000000002 .*list"):
        load_spans([rest])


def _corrupted(entry: Any) -> Any:
    entry = [*entry]
    entry[3] = 999  # more items than the earlier list holds
    return entry


@pytest.mark.parametrize(
    ("corrupt_entry", "problem"),
    [
        (_corrupted, "corrupt otel_replay template"),
        (lambda entry: [["nowhere"], *entry[1:]], "corrupt otel_replay template"),
        (lambda entry: [["nowhere"], "ab", None, 0], "corrupt otel_replay lists"),
        (lambda entry: "not an entry", "corrupt otel_replay"),
    ],
)
def test_a_corrupt_list_reference_names_the_file_and_the_span(
    tmp_path: Path, corrupt_entry: Any, problem: str
) -> None:
    listed = _write(tmp_path / "l.jsonl", _conversation(3))
    lines = listed.read_text().splitlines(keepends=True)
    doc = json.loads(lines[2])
    for attribute in doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]:
        if attribute["key"] == own.REQUEST_LISTS:
            entries = json.loads(attribute["value"]["stringValue"])
            entries[-1] = corrupt_entry(entries[-1])
            attribute["value"]["stringValue"] = json.dumps(entries)
    lines[2] = json.dumps(doc) + "\n"
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_text("".join(lines))
    errors: list[TraceFormatError] = []
    built = build([corrupt], on_error=errors.append).interactions
    assert len(built) == 2  # the other spans still read
    (error,) = errors
    assert str(error).startswith(f"{corrupt}: span 0000000000000003 (chat gpt-4o): ")
    assert problem in str(error)
    with pytest.raises(TraceFormatError, match=rf"^{corrupt}: span 0000000000000003 .*{problem}"):
        load_spans([corrupt])


def _old_conversation() -> list[dict[str, Any]]:
    """The bodies ``traces/pieces_v2.jsonl`` holds (written before lists, as pieces)."""
    system = "You are terse. " * 30
    tool = {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Reads a file. " * 25,
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    history: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": "read notes"},
    ]
    bodies = []
    for turn in range(3):
        bodies.append({"model": "gpt-4o", "messages": [dict(m) for m in history], "tools": [tool]})
        call = {"name": "read", "arguments": '{"path": "n.txt"}'}
        history.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{turn}", "type": "function", "function": call}],
            }
        )
        text = f"line {turn}: " + "the notes say hello. " * 20
        history.append({"role": "tool", "tool_call_id": f"c{turn}", "content": text})
    return bodies


def test_a_trace_file_written_before_lists_still_reads() -> None:
    old = TRACES / "pieces_v2.jsonl"
    assert own.REQUEST_TEMPLATE in old.read_text() and own.REQUEST_LISTS not in old.read_text()
    assert [ex.raw_request for ex in build([old]).interactions] == _old_conversation()
    shown = [n.exchange.raw_request for n in load_spans([old]) if n.exchange is not None]
    assert shown == _old_conversation()


_PHOENIX_READS = """
import json, sys
from phoenix.trace.gen_ai.conversion import get_openinference_attributes
for attrs in json.load(sys.stdin):
    oi = get_openinference_attributes(attrs)
    tools = sorted(k for k in oi if k.startswith("llm.tools."))
    inputs = {k.split(".")[2] for k in oi if k.startswith("llm.input_messages.")}
    print(json.dumps([len(tools), len(inputs)]))
"""


def test_phoenix_reads_every_span_s_tools_and_messages(tmp_path: Path) -> None:
    """Arize Phoenix's own reading of the GenAI conventions (the one its OTLP receiver
    runs) finds every tool and every input message in each span, the spans whose tools
    are named only included."""
    python = phoenix_python()
    if not python.exists():
        raise RuntimeError(f"arize-phoenix is not installed at {python}: run `make backends`")
    spans = _spans(_write(tmp_path / "l.jsonl", _conversation(3)))
    keys = (genai.PROVIDER_NAME, genai.REQUEST_MODEL, genai.INPUT_MESSAGES)
    given_ = [{k: s[k] for k in (*keys, genai.TOOL_DEFINITIONS) if k in s} for s in spans]
    done = subprocess.run(
        [str(python), "-c", _PHOENIX_READS],
        input=json.dumps(given_),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    read = [json.loads(line) for line in done.stdout.splitlines()]
    messages = [len(json.loads(s[genai.INPUT_MESSAGES])) for s in spans]
    assert read == [[12, n] for n in messages]


def test_a_span_stored_without_its_lists_is_not_referred_to() -> None:
    """A recording run refers only to the lists of the calls it recorded (their lines
    tell it whether its requests name its directories): a replayed call's span is stored
    with its pieces but without its lists."""
    first, second = _conversation(2)
    ledger = Ledger()
    with ledger.storing(lists=False) as kept:
        exchange_to_trace_json(first, ledger=ledger)
        kept.append(True)
    doc = exchange_to_trace_json(second, ledger=ledger)
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    attrs = {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}
    assert attrs[own.FORMAT_ATTRIBUTE] == "2"  # refers to no earlier list
    assert "parameters" in json.loads(attrs[genai.TOOL_DEFINITIONS])[0]  # written whole
    assert own.PIECE_MARKER in attrs[own.REQUEST_TEMPLATE]  # the pieces are referred to
