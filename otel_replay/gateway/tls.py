"""aiohttp's client TLS contexts, their certificate bundle read at their first use.

``aiohttp.connector`` makes two TLS contexts as it is imported (its verified and unverified
defaults), each reading the system's certificate bundle: some 50 ms each, on every start of
a gateway, though a replay never opens a TLS connection and a recording only once it
forwards. ``defer_bundles`` (the CLI calls it before the gateway loads) has the contexts
that module's body makes on its thread told to read the bundle later: once made, they are
``deferred_context()``'s (the same settings), which reads it at the first handshake. The
module is found and loaded as always; other threads' contexts are made as always.
"""

from __future__ import annotations

import functools
import sys
import threading
from importlib.machinery import PathFinder
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import ssl

__all__ = ["defer_bundles", "deferred_context"]

_CONNECTOR = "aiohttp.connector"
_LOADING = threading.Lock()


@functools.cache
def deferred_context() -> type[ssl.SSLContext]:
    """The class of an ``ssl.SSLContext`` told to use the default certificate locations
    that reads them as it first wraps a connection or shows its store (the lookup an eager
    one's is; made at first need: ``ssl`` is not imported before the gateway's thread)."""
    import ssl

    class DeferredContext(ssl.SSLContext):
        _deferred = False

        def _read_bundle(self) -> None:
            if self._deferred:
                with _LOADING:
                    if self._deferred:
                        super().set_default_verify_paths()
                        self._deferred = False

        def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
            self._read_bundle()
            return super().wrap_socket(*args, **kwargs)

        def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
            self._read_bundle()
            return super().wrap_bio(*args, **kwargs)

        def get_ca_certs(self, binary_form: bool = False) -> Any:
            self._read_bundle()
            return super().get_ca_certs(binary_form)

        def cert_store_stats(self) -> dict[str, int]:
            self._read_bundle()
            return super().cert_store_stats()

    return DeferredContext


class _Deferring:
    """The path finder's loader of ``aiohttp.connector``: the contexts its body makes told
    to use the default locations are deferred ones once it has run."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: Any) -> ModuleType | None:
        created: ModuleType | None = self._loader.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        import ssl

        made: list[ssl.SSLContext] = []
        this = threading.get_ident()
        eager = ssl.SSLContext.set_default_verify_paths

        def deferring(context: ssl.SSLContext) -> None:
            if threading.get_ident() != this:  # another thread's: as always
                eager(context)
            elif type(context) is ssl.SSLContext:
                made.append(context)
            else:
                eager(context)

        own = vars(ssl.SSLContext).get("set_default_verify_paths")  # else inherited
        ssl.SSLContext.set_default_verify_paths = deferring  # type: ignore[method-assign,assignment]
        try:
            self._loader.exec_module(module)
        finally:
            if own is None:
                del ssl.SSLContext.set_default_verify_paths
            else:
                ssl.SSLContext.set_default_verify_paths = own  # type: ignore[method-assign]
        deferred = deferred_context()
        for context in made:
            context.__class__ = deferred
            context._deferred = True  # type: ignore[attr-defined]


class _ConnectorFinder:
    """On ``sys.meta_path`` until ``aiohttp.connector`` is found."""

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> Any:
        if name != _CONNECTOR:
            return None
        if cls in sys.meta_path:
            sys.meta_path.remove(cls)
        spec = PathFinder.find_spec(name, path, target)
        if spec is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = cast(Any, _Deferring(spec.loader))
        return spec


def defer_bundles() -> None:
    """Have ``aiohttp.connector``, when this process imports it, make its TLS contexts
    without reading the certificate bundle (nothing once it is imported)."""
    if _CONNECTOR not in sys.modules and _ConnectorFinder not in sys.meta_path:
        sys.meta_path.insert(0, _ConnectorFinder)
