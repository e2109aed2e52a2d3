"""Stub upstreams and the demo: no keys, no network."""
