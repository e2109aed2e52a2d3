"""A recording learns whether its requests name the working or home directory from each
span line and the pieces earlier lines stored (``session.places``): a piece searched once
is not searched again, and what the line's bytes cannot show is read from the request."""

from __future__ import annotations

import json

from otel_replay.core.exchange import CanonicalRequest
from otel_replay.session.places import PlacesSeen


def _seen(cwd: str, home: str = "/home/nobody-here") -> PlacesSeen:
    return PlacesSeen((cwd, home))


def _request(text: str) -> CanonicalRequest:
    return CanonicalRequest(
        endpoint="/v1/chat/completions",
        messages=[{"role": "user", "parts": [{"type": "text", "content": text}]}],
    )


def _line(text: str) -> bytes:
    return json.dumps({"content": text}).encode()


def test_a_directory_in_a_piece_stored_earlier_is_seen() -> None:
    piece = "earlier output " * 30 + "/work/projects/app/src/main.py"
    seen = _seen("/work/projects/app")
    seen.learn(_request("go on"), _line("go on"), [])
    assert not seen.mentioned
    seen.learn(_request(piece), _line("otel-replay:piece:abc"), [piece])
    assert seen.mentioned


def test_a_piece_met_again_is_remembered_and_a_new_one_still_searched() -> None:
    clean = "a long tool result " * 40
    seen = _seen("/work/projects/app")
    for _ in range(3):
        seen.learn(_request(clean), _line("marker"), [clean])
    assert not seen.mentioned
    assert clean in seen._without
    named = "x" * 300 + " see /home/nobody-here/.config"
    seen.learn(_request(named), _line("marker"), [clean, named])
    assert seen.mentioned


def test_a_line_naming_no_directory_leaves_it_unmentioned() -> None:
    seen = _seen("/work/projects/app")
    seen.learn(_request("nothing here"), _line("nothing here"), ["x" * 400])
    assert not seen.mentioned


def test_a_directory_whose_json_form_is_escaped_is_read_from_the_request() -> None:
    """A Windows path's backslashes are escaped in a JSON line, so the line's bytes
    cannot show it: the request itself is read."""
    place = "C:\\Users\\dev\\app"
    text = f"edit {place}\\main.py"
    seen = _seen(place, "C:\\Users\\dev")
    line = _line(text)
    assert place.encode() not in line  # the line holds it escaped
    seen.learn(_request(text), line, [])
    assert seen.mentioned
