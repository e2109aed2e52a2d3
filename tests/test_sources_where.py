"""The ``--from`` address and the extra headers: one row per form."""

from __future__ import annotations

import pytest

from otel_replay.core.errors import ConfigError
from otel_replay.sources.transport import extra_headers
from otel_replay.sources.where import parse_where

ROWS = [  # address -> backend, base, path, query; how errors name it
    ("phoenix+http://127.0.0.1:6006", "phoenix", "http://127.0.0.1:6006", "", {}),
    ("phoenix+https://px.internal/my%20agent/", "phoenix", "https://px.internal", "my agent", {}),
    ("JAEGER+http://[::1]:16686", "jaeger", "http://[::1]:16686", "", {}),
    ("tempo+http://tempo:3200", "tempo", "http://tempo:3200", "", {}),
    ("clickhouse+https://u:p%40ss@ch:8443/otel?table=t", "clickhouse", "https://ch:8443", "otel",
     {"table": "t"}),
    ("mlflow+http://127.0.0.1:5000/7", "mlflow", "http://127.0.0.1:5000", "7", {}),
    ("langfuse+https://cloud.langfuse.com", "langfuse", "https://cloud.langfuse.com", "", {}),
]  # fmt: skip
NAMES = [
    "phoenix at http://127.0.0.1:6006",
    "phoenix at https://px.internal/my agent",
    "jaeger at http://[::1]:16686",
    "tempo at http://tempo:3200",
    "clickhouse at https://ch:8443/otel",
    "mlflow at http://127.0.0.1:5000/7",
    "langfuse at https://cloud.langfuse.com",
]


@pytest.mark.parametrize(("row", "name"), list(zip(ROWS, NAMES, strict=True)))
def test_an_address_names_backend_base_and_options(row, name):
    address, backend, base, path, query = row
    where = parse_where(address)
    assert (where.backend, where.base, where.path, where.query, where.name) == (
        backend, base, path, query, name
    )  # fmt: skip
    assert "p@ss" not in repr(where)


def test_credentials_in_the_address_are_taken_and_never_shown():
    where = parse_where("clickhouse+https://reader:p%40ss@ch:8443")
    assert (where.user, where.password) == ("reader", "p@ss")
    with pytest.raises(ConfigError) as caught:
        parse_where("clickhouse+http://reader:hunter2@ch:port")
    assert "hunter2" not in str(caught.value) and "reader:***@" in str(caught.value)


def test_extra_headers_use_the_otlp_headers_syntax():
    env = {"OTEL_REPLAY_FROM_HEADERS": "Authorization=Bearer%20t0k, X-Scope-OrgID=tenant-1,,"}
    assert extra_headers(env) == {"Authorization": "Bearer t0k", "X-Scope-OrgID": "tenant-1"}
    assert extra_headers({}) == {}
    with pytest.raises(ConfigError, match="OTEL_REPLAY_FROM_HEADERS: 'oops' is not key=value"):
        extra_headers({"OTEL_REPLAY_FROM_HEADERS": "a=b,oops"})
