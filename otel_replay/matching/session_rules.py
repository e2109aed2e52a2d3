"""The rules a run matches by: the built-in table, the agent profiles, the rules recorded
in the cassette and the user's rule files, with endpoints compared as the operation they
stand for (Azure OpenAI's paths and ``api-version``) and rules scoped by the provider
whose API an endpoint is."""

from __future__ import annotations

import functools
from typing import Any

from otel_replay import providers
from otel_replay.matching.normalize import Normalizer
from otel_replay.matching.profiles import recorded_places, recorded_rules
from otel_replay.matching.sources import DEFAULT_SOURCES as DEFAULT_SOURCES
from otel_replay.matching.sources import RuleSources

__all__ = ["DEFAULT_SOURCES", "cassette_rules", "matching_rules"]


@functools.lru_cache(maxsize=16)
def matching_rules(sources: RuleSources = DEFAULT_SOURCES) -> Normalizer:
    """The engine for ``sources``; one per set of sources, so its memo serves every run."""
    return Normalizer(
        sources.table(),
        endpoint=providers.match_endpoint,
        model=providers.match_model,
        provider=_provider_of,
        profiles=sources.agent_profiles(),
    )


def cassette_rules(
    rules: RuleSources, source: dict[str, Any], name: str
) -> tuple[Normalizer, Normalizer | None]:
    """The rules live requests match by (``rules`` over those recorded in the cassette's
    ``source``), and, when it says where it was recorded, its recordings' rules."""
    normalizer = matching_rules(
        rules.with_recorded(recorded_rules(source, f"{name}: source.rules"))
    )
    places = recorded_places(source)
    return normalizer, normalizer.with_places(*places) if places else None


def _provider_of(endpoint: str) -> str:
    return providers.provider_for(endpoint.partition("?")[0], {}).name
