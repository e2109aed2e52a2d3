"""Claude Code's body log events read into exchanges: body files (``body_ref``) where
written or beside the traces and nothing else, truncated bodies skipped with the reason
and the fix, ``betas`` taken back out of the body, responses paired by request id, and
every reported call tallied per source. (The real CLI's telemetry is read end to end in
test_claude_code_telemetry.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToJson
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from otel_replay.otlp.attributes import dict_to_attributes, python_to_any_value
from otel_replay.pipeline.build import build_file
from otel_replay.readers import read_exchanges
from otel_replay.readers.claude_code import (
    FAILED,
    NO_BODY,
    NO_FILE,
    TRUNCATED,
    ClaudeCodeReader,
)

BETAS = ["claude-code-20250219", "context-management-2025-06-27"]


def request(text: str) -> dict[str, Any]:
    return {
        "model": "claude-opus-5-5",
        "max_tokens": 100,
        "stream": True,
        "betas": BETAS,
        "messages": [{"role": "user", "content": text}],
    }


def response(text: str) -> dict[str, Any]:
    return {
        "id": "msg_" + text.replace(" ", ""),
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-5-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }


def event(t: int, name: str, **attrs: Any) -> LogRecord:
    return LogRecord(
        time_unix_nano=t,
        body=python_to_any_value(f"claude_code.{name}"),
        attributes=dict_to_attributes({"event.name": name, "session.id": "s1", **attrs}),
    )


def logs(*records: LogRecord) -> ExportLogsServiceRequest:
    resource = Resource(
        attributes=dict_to_attributes({"service.name": "claude-code", "service.version": "2.1.332"})
    )
    return ExportLogsServiceRequest(
        resource_logs=[ResourceLogs(resource=resource, scope_logs=[ScopeLogs(log_records=records)])]
    )


def test_betas_leave_the_body_and_responses_pair_by_request_id():
    first, second = request("one"), request("two")
    records = [
        event(1, "api_request_body", body=json.dumps(first), request_body_id="r1"),
        event(2, "api_request_body", body=json.dumps(second), request_body_id="r2"),
        event(3, "api_response_body", body=json.dumps(response("to two")), request_body_id="r2"),
        event(4, "api_response_body", body=json.dumps(response("to one")), request_body_id="r1"),
        event(5, "api_request"),
        event(6, "api_request"),
    ]
    reader = ClaudeCodeReader()
    found = list(read_exchanges([], [logs(*records)], body_events=reader))
    assert sorted(ex.raw_request["messages"][0]["content"] for ex in found) == ["one", "two"]
    for ex in found:
        assert "betas" not in ex.raw_request and "betas" not in ex.request.params
        said = "".join(e.data for e in ex.response.events or [])
        assert '"id":"msg_to' + ex.raw_request["messages"][0]["content"] + '"' in said
    tally = reader.tallies["claude-code 2.1.332"]
    assert (tally.calls, tally.read, tally.reasons()) == (2, 2, {})


def test_body_files_are_read_where_written_or_beside_the_traces_and_nothing_else(tmp_path):
    written, beside = tmp_path / "written", tmp_path / "traces"
    written.mkdir()
    beside.mkdir()
    (written / "a.request.json").write_text(json.dumps(request("one")))
    (beside / "a.response.json").write_text(json.dumps(response("hi")))
    (beside / "secret.txt").write_text('{"model": "x"}')
    records = [
        event(1, "api_request_body", body_ref=str(written / "a.request.json")),
        event(2, "api_response_body", body_ref="/elsewhere/a.response.json"),
        event(3, "api_request_body", body_ref=str(beside / "secret.txt")),
        event(4, "api_request_body", body_ref="/elsewhere/gone.request.json"),
    ]
    reader = ClaudeCodeReader(body_dirs=[beside])
    [ex] = read_exchanges([], [logs(*records)], body_events=reader)
    assert ex.raw_request == {k: v for k, v in request("one").items() if k != "betas"}
    reasons = reader.tallies["claude-code 2.1.332"].reasons()
    assert reasons[NO_FILE] == 1 and sum(reasons.values()) == 2  # secret.txt: not a body file


def test_what_cannot_be_read_is_tallied_with_its_reason_and_fix():
    records = [
        event(1, "api_request_body", body='{"model": "claude', body_truncated="true"),
        event(2, "api_response_body", body=json.dumps(response("hi"))),
        event(3, "api_request"),
        event(4, "api_request"),  # a call logged with no body event at all
        event(5, "api_error"),
    ]
    reader = ClaudeCodeReader()
    assert list(read_exchanges([], [logs(*records)], body_events=reader)) == []
    tally = reader.tallies["claude-code 2.1.332"]
    assert tally.reasons() == {TRUNCATED: 1, NO_BODY: 2}
    line = tally.describe("claude-code 2.1.332")
    assert line.startswith("claude-code 2.1.332: 3 model calls, 0 replayable; skipped: 1 ")
    assert "(fix: OTEL_LOG_RAW_API_BODIES=file:DIR" in line
    assert "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1" in line


def test_a_failed_call_is_skipped_as_such():
    records = [
        event(1, "api_request_body", body=json.dumps(request("one"))),
        event(2, "api_error", status_code="529"),
        event(3, "api_request_body", body=json.dumps(request("two"))),
        event(4, "api_response_body", body=json.dumps(response("hi"))),
        event(5, "api_request"),
    ]
    reader = ClaudeCodeReader()
    [ex] = read_exchanges([], [logs(*records)], body_events=reader)
    assert ex.raw_request["messages"][0]["content"] == "two"
    assert reader.tallies["claude-code 2.1.332"].reasons() == {FAILED: 1}


def test_a_build_of_calls_none_of_which_can_be_read_writes_nothing(tmp_path: Path):
    records = [
        event(1, "api_request_body", body="{", body_truncated="true"),
        event(2, "api_request"),
    ]
    path = tmp_path / "run.logs.jsonl"
    path.write_text(MessageToJson(logs(*records), indent=None) + "\n")
    report = build_file([path], tmp_path / "c.json")
    assert report.unreplayable and not report.written
    assert report.notes and "body_truncated" in report.notes[0]
    assert not (tmp_path / "c.json").exists()


def test_the_directories_a_request_names_are_its_places():
    bare = {**request("hi"), "system": [{"type": "text", "text": "CWD: /srv/proj\nDate: x"}]}
    full = {
        **request("hi"),
        "system": [{"type": "text", "text": "memory at `/home/a/.claude/projects/-p/memory/`"}],
        "messages": [
            {
                "role": "system",
                "content": [
                    {
                        "type": "text",
                        "text": "# Environment\n"
                        " - Primary working directory: /home/a/p\n - Platform: linux",
                    }
                ],
            },
        ],
    }
    for body, places in ((bare, ("/srv/proj", "")), (full, ("/home/a/p", "/home/a"))):
        records = [
            event(1, "api_request_body", body=json.dumps(body)),
            event(2, "api_response_body", body=json.dumps(response("hi"))),
        ]
        reader = ClaudeCodeReader()
        assert len(list(read_exchanges([], [logs(*records)], body_events=reader))) == 1
        assert reader.places == places
