"""The small helpers every layer shares: ids, short hashes, the GC pause."""

from __future__ import annotations

import gc
import hashlib

import pytest

from otel_replay.core.gcpause import paused_gc
from otel_replay.core.ids import hex_id, id_bytes, new_span_id, new_trace_id, short_hash


def test_new_ids_are_random_hex_of_the_otlp_sizes() -> None:
    trace, span = new_trace_id(), new_span_id()
    assert len(bytes.fromhex(trace)) == 16 and len(bytes.fromhex(span)) == 8
    assert new_trace_id() != trace and new_span_id() != span


def test_hex_and_bytes_round_trip_and_absent_ids() -> None:
    assert hex_id(b"\x01\xab") == "01ab"
    assert hex_id(b"") is None
    assert id_bytes("01ab", 2) == b"\x01\xab"
    fresh = id_bytes(None, 8)
    assert len(fresh) == 8 and id_bytes("", 8) != fresh


def test_short_hash_is_the_sha256_prefix_shown_in_misses() -> None:
    assert short_hash("{}") == hashlib.sha256(b"{}").hexdigest()[:7]
    assert short_hash("é") == hashlib.sha256("é".encode()).hexdigest()[:7]


def test_paused_gc_restores_the_collector_even_on_error() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused_gc():
        assert not gc.isenabled()
        raise RuntimeError("boom")
    assert gc.isenabled()
    with paused_gc(active=False):
        assert gc.isenabled()
    with paused_gc(), paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
