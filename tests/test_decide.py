"""The gateway's decision for a call, as a table, without aiohttp."""

from __future__ import annotations

import pytest

from otel_replay.core.errors import ReplayMiss
from otel_replay.gateway.decide import Decision, carries_own_key, decide, matches
from otel_replay.providers import credential_headers

MISS = ReplayMiss("model changed (hash a→b)")


@pytest.mark.parametrize(
    ("mode", "routed", "match", "own_key", "expected"),
    [
        # not a provider path: nothing else counts
        ("strict", False, None, False, Decision("not_provider")),
        ("record", False, None, True, Decision("not_provider")),
        # record: everything forwarded, nothing matched
        ("record", True, None, False, Decision("forward")),
        ("record", True, None, True, Decision("forward")),
        # a hit replays in every matching mode, whatever the key
        ("strict", True, 3, False, Decision("replay", index=3)),
        ("auto", True, 0, True, Decision("replay", index=0)),
        # a miss: strict never forwards; auto only with the gateway's own key
        ("strict", True, MISS, True, Decision("miss", miss=MISS)),
        ("auto", True, MISS, False, Decision("miss", miss=MISS)),
        ("auto", True, MISS, True, Decision("forward", miss=MISS)),
    ],
)
def test_decision_table(mode, routed, match, own_key, expected):
    assert decide(mode, routed=routed, match=match, own_key=own_key) == expected


@pytest.mark.parametrize(
    ("mode", "own_key", "match", "expected"),
    [
        # a live call goes to the provider in auto mode, with the gateway's own key only
        ("auto", True, None, Decision("forward")),
        ("auto", False, 2, Decision("replay", index=2)),
        ("auto", False, MISS, Decision("miss", miss=MISS)),
        # strict never forwards, live or not
        ("strict", True, 1, Decision("replay", index=1)),
        ("strict", True, MISS, Decision("miss", miss=MISS)),
    ],
)
def test_live_calls(mode, own_key, match, expected):
    assert decide(mode, routed=True, match=match, own_key=own_key, live=True) == expected


def test_a_matching_mode_needs_the_match():
    assert matches("strict") and matches("auto") and not matches("record")
    with pytest.raises(ValueError, match="after matching"):
        decide("strict", routed=True, match=None, own_key=True)


KEY = b"sk-own-key"


@pytest.mark.parametrize(
    ("headers", "own"),
    [
        ({"authorization": "Bearer sk-own-key"}, True),
        ({"x-api-key": "sk-own-key"}, True),
        ({"api-key": "sk-own-key"}, True),
        ({"authorization": "Bearer other"}, False),
        ({"authorization": "sk-own-key"}, False),  # no scheme
        ({}, False),
        # a key header is the credential offered, even beside a bearer token
        ({"x-api-key": "proxy", "authorization": "Bearer sk-own-key"}, False),
        ({"x-api-key": "sk-own-key", "authorization": "Bearer other"}, True),
    ],
)
def test_own_key_check(headers, own):
    assert carries_own_key(headers, credential_headers(), [KEY]) is own
    assert carries_own_key(headers, credential_headers(), []) is False
