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

_PATHS_REMEMBERED = 1024
"""Paths whose route is remembered at most; past it the memory starts afresh."""


class _Undecided:
    """The path alone does not decide the route."""


_UNDECIDED = _Undecided()


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
        """The path sent upstream: the request's, less the mount's ``strip``, under its
        ``under``."""
        strip = self.mount.strip
        local = path[len(strip) :] if strip and path.startswith(strip) else path
        return self.mount.under + local

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
        self._by_path: dict[str, Route | None] = {}

    def route(self, path: str, headers: Mapping[str, str]) -> Route | None:
        """The route of a request (path as received; header names in any case), or None
        when the path is not under any mount: not a provider API call. What the path
        alone decides is remembered per path (the same few paths come every request)."""
        found = self._by_path.get(path, _UNDECIDED)
        if not isinstance(found, _Undecided):
            return found
        route, by_path = self._route(path, headers)
        if by_path:
            if len(self._by_path) >= _PATHS_REMEMBERED:
                self._by_path.clear()
            self._by_path[path] = route
        return route

    def _route(self, path: str, headers: Mapping[str, str]) -> tuple[Route | None, bool]:
        """The route (as ``route`` gives it, remembering nothing), and whether the path
        alone decided it."""
        prefix = named_prefix(path) if self._named is not None else ""
        if prefix and path.startswith(prefix + "/"):
            assert self._named is not None
            spec = self._named(prefix.rpartition("/")[2])
            return Route(spec, spec.mounts[0]), False
        candidates = [row for row in self._rows if path.startswith(row[1].prefix)]
        if candidates:
            longest = len(candidates[0][1].prefix)
            candidates = [row for row in candidates if len(row[1].prefix) == longest]
        decided = _by_path(path, candidates)
        if isinstance(decided, _Undecided):
            return _by_headers(candidates, headers), False
        return decided, True


_Rows = list[tuple[ProviderSpec, Mount]]


def _by_path(path: str, candidates: _Rows) -> Route | _Undecided | None:
    """The route the path alone decides among the mounts of its longest prefix: none,
    or the one whose pattern or paths claim it; ``_UNDECIDED`` when no such mount does."""
    if not candidates:
        return None
    for spec, mount in candidates:
        if mount.pattern is not None and mount.pattern.match(path):
            return Route(spec, mount)
    endpoint = strip_prefix(path)
    for spec, mount in candidates:
        if mount.paths and endpoint.startswith(mount.paths):
            return Route(spec, mount)
    return _UNDECIDED


def _by_headers(candidates: _Rows, headers: Mapping[str, str]) -> Route | None:
    """The route a header decides, else the mount taking the rest."""
    names = {name.lower() for name in headers}
    for spec, mount in candidates:
        if names.intersection(mount.headers):
            return Route(spec, mount)
    for spec, mount in candidates:
        if mount.rest:
            return Route(spec, mount)
    return None
