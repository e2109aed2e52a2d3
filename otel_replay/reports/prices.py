"""What live model calls cost: token usage times the list price of the model.

The prices are one data file, ``prices.json``, with the date they were taken from the
providers' public pages; a model it does not list is not priced (never guessed). A dated
snapshot (``gpt-4o-2024-08-06``, Vertex AI's ``claude-sonnet-4@20250514``) is priced as the
longest listed name it starts with.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from otel_replay import providers
from otel_replay.core.exchange import Exchange

__all__ = ["cost_of", "money", "price_date", "price_of", "priced_total", "usage_of"]

_PER = 1_000_000


@cache
def _table() -> dict[str, Any]:
    from importlib import resources

    text = resources.files("otel_replay.reports").joinpath("prices.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def money(value: float) -> str:
    """``$0.0123``; amounts under a cent to six places, so a small run is not ``$0.0000``."""
    return f"${value:.4f}" if value >= 0.01 or value == 0 else f"${value:.6f}"


def price_date() -> str:
    """The date the price table was taken."""
    return str(_table()["date"])


def price_of(model: str | None) -> Mapping[str, float] | None:
    """The per-million-token prices of ``model`` (input, output, cached_input), or None."""
    if not model:
        return None
    models: dict[str, dict[str, float]] = _table()["models"]
    name = model.lower().split("/")[-1].replace("@", "-")
    best = max((k for k in models if name == k or name.startswith(k + "-")), key=len, default="")
    return models.get(best)


def usage_of(exchange: Exchange) -> dict[str, int]:
    """The token usage an answer reports (semconv names), empty when it reports none."""
    response = exchange.response
    if response.status >= 400 or (response.body is None and not response.events):
        return {}
    try:
        provider = providers.get(exchange.provider)
        body = response.body
        if response.events is not None:
            body = provider.body_from_stream(exchange.operation, response.events)
        usage = provider.view_from_response(exchange.operation, body).usage
    except Exception:  # an answer no provider view reads has no usage to price
        return {}
    return {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}


def cost_of(exchange: Exchange) -> float | None:
    """The list price of one model call in the table's currency, or None when its model
    is not in the table or its answer reports no usage."""
    request = exchange.request  # a Bedrock model id priced as the model it names
    answered = (exchange.provenance or {}).get("model")  # a fork's model, sent in its place
    model = answered if isinstance(answered, str) else request.model
    price = price_of(providers.match_model(request.endpoint, model))
    usage = usage_of(exchange)
    if price is None or not usage:
        return None
    read = usage.get("cache_read.input_tokens", 0)
    written = usage.get("cache_creation.input_tokens", 0)
    tokens_in = usage.get("input_tokens", 0)
    # OpenAI counts cached tokens inside input_tokens; Anthropic and Bedrock count them apart
    apart = exchange.provider in ("anthropic", "aws.bedrock")
    fresh = tokens_in if apart else max(0, tokens_in - read)
    cost = fresh * price["input"] + usage.get("output_tokens", 0) * price["output"]
    cost += read * price.get("cached_input", price["input"]) + written * price["input"] * 1.25
    return cost / _PER


def priced_total(exchanges: Iterable[Exchange]) -> tuple[float, int]:
    """The summed cost of the calls that could be priced, and how many could not."""
    total, unpriced = 0.0, 0
    for exchange in exchanges:
        cost = cost_of(exchange)
        if cost is None:
            unpriced += 1
        else:
            total += cost
    return total, unpriced
