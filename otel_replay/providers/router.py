"""Which upstream a gateway request is for: mounts to (API surface, named upstream).

Like httpx's ``mounts`` or mitmproxy's mode specs, the router is a table: each
:class:`~otel_replay.providers.spec.Mount` of each :class:`ProviderSpec` is a row. Longer
prefixes win; under one prefix a mount whose pattern the path matches wins, then one that
recognises the path, then one that recognises a header, then the mount that takes the
rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from otel_replay.providers.named import named_prefix
from otel_replay.providers.parts import strip_prefix
from otel_replay.providers.spec import Mount, ProviderSpec

__all__ = ["Route", "Router"]


@dataclass(frozen=True, slots=True)
class Route:
    """Where one request goes: the upstream's declaration and the mount that matched."""

    spec: ProviderSpec
    mount: Mount

    @property
    def api(self) -> str:
        return self.spec.api

    @property
    def upstream(self) -> str:
        return self.spec.name

    def forward_path(self, path: str) -> str:
        """The path sent upstream: the request's, less the mount's ``strip``."""
        strip = self.mount.strip
        return path[len(strip) :] if strip and path.startswith(strip) else path

    def provider_path(self, path: str, query: Mapping[str, str]) -> str:
        """The path the API surface reads (an endpoint, as matching compares it)."""
        local = self.forward_path(path)
        return local if self.mount.reads is None else self.mount.reads(local, query)


class Router:
    """Mounts of a set of upstream declarations; with ``named``, also ``/u/NAME/...`` for
    the named upstream ``named(NAME)`` declares."""

    def __init__(
        self,
        specs: Iterable[ProviderSpec],
        named: Callable[[str], ProviderSpec] | None = None,
    ) -> None:
        rows = [(spec, mount) for spec in specs for mount in spec.mounts]
        self._rows = sorted(rows, key=lambda row: -len(row[1].prefix))
        self.prefixes = tuple(dict.fromkeys(mount.prefix for _, mount in self._rows))
        self._named = named

    def route(self, path: str, headers: Mapping[str, str]) -> Route | None:
        """The route of a request (path as received, lower-case header names), or None
        when the path is not under any mount: not a provider API call."""
        prefix = named_prefix(path) if self._named is not None else ""
        if prefix and path.startswith(prefix + "/"):
            assert self._named is not None
            spec = self._named(prefix.rpartition("/")[2])
            return Route(spec, spec.mounts[0])
        candidates = [row for row in self._rows if path.startswith(row[1].prefix)]
        if not candidates:
            return None
        longest = len(candidates[0][1].prefix)
        candidates = [row for row in candidates if len(row[1].prefix) == longest]
        for spec, mount in candidates:
            if mount.pattern is not None and mount.pattern.match(path):
                return Route(spec, mount)
        endpoint = strip_prefix(path)
        for spec, mount in candidates:
            if mount.paths and endpoint.startswith(mount.paths):
                return Route(spec, mount)
        names = {name.lower() for name in headers}
        for spec, mount in candidates:
            if names.intersection(mount.headers):
                return Route(spec, mount)
        for spec, mount in candidates:
            if mount.rest:
                return Route(spec, mount)
        return None
