"""Limits every layer agrees on, so that what one accepts the next can hold."""

from __future__ import annotations

__all__ = ["CASSETTE_FRAME_DEPTH", "MAX_BODY_DEPTH"]

MAX_BODY_DEPTH = 128
"""How deeply a model request or response body's JSON may nest (tool schemas nest a few
tens deep); the gateway refuses a deeper request body."""

CASSETTE_FRAME_DEPTH = 32
"""The levels a cassette wraps around a body (the document, its interactions, the
canonical request's messages and parts); a cassette may nest this much deeper than a
body, so every body the gateway accepts can be recorded and loaded again."""
