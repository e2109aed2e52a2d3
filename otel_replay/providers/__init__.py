"""Provider API surfaces and the table that declares them.

Adding a provider: one module under providers/ plus one row in ``PROVIDERS``.

The module implements the :class:`~otel_replay.providers.base.Provider` surface (reading
requests, its errors and streams); the row (a :class:`ProviderSpec`, in ``table.py``)
declares the rest once: the gateway paths that reach it, the environment its SDK reads,
its credentials, the response headers kept, its stream codec, its semantic-convention
names, its SDK's modules and its public hosts. The gateway, the upstream, the runner, the
egress guard and the command line read only this table. An upstream serving another
provider's API (Azure OpenAI serves OpenAI's) is a row with that ``api``.

``provider_for(path, headers)`` picks the surface that owns a request; ``get(name)``
returns a surface by name; ``ROUTER`` maps a gateway path to its (surface, upstream)
(``surfaces.py``, with the semantic-convention names of the surfaces both ways);
``egress_hosts()`` lists every model provider host, the rows' and those of providers
without a row yet (``UNDECLARED_HOSTS``), for the egress guard and the upstream check;
which headers carry credentials and which a recording keeps is in ``headers.py``.
"""

from __future__ import annotations

from otel_replay.providers.azure import AZURE_PREFIX
from otel_replay.providers.base import OutputView, Provider
from otel_replay.providers.headers import credential_headers, forwarded_headers, kept_headers
from otel_replay.providers.named import named_upstream
from otel_replay.providers.router import Route
from otel_replay.providers.spec import ProviderSpec
from otel_replay.providers.surfaces import (
    ROUTER,
    all_providers,
    api_named,
    get,
    match_endpoint,
    match_model,
    provider_for,
    semconv_name,
    semconv_names,
    surface_name,
)
from otel_replay.providers.table import (
    PROVIDERS,
    UNDECLARED_HOSTS,
    UNDECLARED_KEYS,
    egress_hosts,
    sdk_modules,
    spec,
    upstream_spec,
)

__all__ = [
    "AZURE_PREFIX",
    "PROVIDERS",
    "ROUTER",
    "UNDECLARED_HOSTS",
    "UNDECLARED_KEYS",
    "OutputView",
    "Provider",
    "ProviderSpec",
    "Route",
    "all_providers",
    "api_named",
    "credential_headers",
    "egress_hosts",
    "forwarded_headers",
    "get",
    "kept_headers",
    "match_endpoint",
    "match_model",
    "named_upstream",
    "provider_for",
    "sdk_modules",
    "semconv_name",
    "semconv_names",
    "spec",
    "surface_name",
    "upstream_spec",
]
