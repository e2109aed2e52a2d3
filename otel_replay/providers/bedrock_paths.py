"""AWS Bedrock Runtime's paths, ``/model/{modelId}/{action}``, and what the provider table
and matching read off them without loading the surface (``bedrock``, which loads
Anthropic's): the endpoint and the model as matching compares them, and what Claude Code
on Bedrock needs in strict replay."""

from __future__ import annotations

import re
from collections.abc import Mapping

from otel_replay.core import envvars as ev

__all__ = ["MODEL_PREFIX", "claude_code_defaults", "match_endpoint", "match_model", "split_path"]

MODEL_PREFIX = "/model/"


def split_path(path: str) -> tuple[str | None, str]:
    """(model id, action) of a Bedrock Runtime path; (None, path) for any other path."""
    base = path.partition("?")[0]
    if not base.startswith(MODEL_PREFIX):
        return None, base
    model, _, action = base[len(MODEL_PREFIX) :].rpartition("/")
    return (model or None), action


def match_endpoint(endpoint: str) -> str:
    """A Bedrock endpoint as matching compares it: without the model, which the request's
    model carries (so a changed model is a ``model changed`` miss)."""
    model, action = split_path(endpoint)
    return endpoint if model is None else f"{MODEL_PREFIX}{{model}}/{action}"


def claude_code_defaults(caller: Mapping[str, str], mode: str) -> dict[str, str]:
    """What Claude Code on Bedrock needs in strict replay: told not to sign its calls
    (nothing goes live, and the caller may hold no AWS credentials)."""
    return {ev.CLAUDE_CODE_SKIP_BEDROCK_AUTH: "1"} if mode == "strict" else {}


_GEOGRAPHIES = ("us.", "us-gov.", "eu.", "apac.", "jp.", "au.", "ca.", "global.")
"""Prefixes of cross-region inference profiles (``us.anthropic.claude-…``)."""
_VENDOR = re.compile(r"[a-z][a-z0-9-]*")


def match_model(model: str | None) -> str | None:
    """A Bedrock model id as matching compares it: the model alone, without an inference
    profile's ARN (which names the account) or geography, and without the vendor. So
    ``us.anthropic.claude-…`` called in another account or region is the same model as
    ``anthropic.claude-…``, and as ``claude-…``, which is how the OpenLLMetry Bedrock
    instrumentation records it."""
    if not model:
        return model
    name = model.rpartition("/")[2] if model.startswith("arn:") else model
    for geography in _GEOGRAPHIES:
        if name.startswith(geography) and name.count(".") >= 2:
            name = name[len(geography) :]
            break
    vendor, dot, rest = name.partition(".")
    return rest if dot and rest and _VENDOR.fullmatch(vendor) else name
