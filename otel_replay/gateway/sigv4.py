"""Re-signing a forwarded AWS request (SigV4) for the real endpoint.

The agent's SDK signs each request for the host it sends it to — the gateway — so its
signature cannot be forwarded. A live call is signed again by botocore's own signer for
the URL it is sent to, with the gateway's own AWS credentials (the caller's
``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, else botocore's
credential chain: profiles, SSO, instance roles), for the region the agent signed for.
None of the agent's signature headers is forwarded, and no request header is recorded.

botocore is imported on the first live AWS call: only recording Bedrock needs it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from otel_replay.core import envvars as ev
from otel_replay.core.errors import ConfigError

__all__ = ["AwsSigner", "NoAwsCredentials", "signed_region"]

# the agent's signature: replaced, never forwarded
_SIGNATURE = frozenset(
    {"authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256"}
)
_SCOPE = re.compile(r"Credential=[^/,\s]+/\d{8}/([a-z0-9-]+)/")


class NoAwsCredentials(ConfigError):
    """A live AWS call, and no credentials of the gateway's own to sign it with."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"no AWS credentials to sign the live call with ({detail}): set "
            f"{ev.AWS_ACCESS_KEY_ID} and {ev.AWS_SECRET_ACCESS_KEY} (or an AWS profile) "
            "before starting otel-replay"
        )


def signed_region(headers: Mapping[str, str]) -> str | None:
    """The region a request was signed for (its ``Authorization`` credential scope)."""
    for name, value in headers.items():
        if name.lower() == "authorization":
            found = _SCOPE.search(value)
            return found.group(1) if found else None
    return None


class AwsSigner:
    """Signs forwarded requests with the credentials of ``environ`` (the caller's)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        self._credentials: Any = None

    def region(self, headers: Mapping[str, str]) -> str | None:
        """The region to sign for: the agent's, else the caller's configured one."""
        env = self._environ
        return signed_region(headers) or env.get(ev.AWS_REGION) or env.get(ev.AWS_DEFAULT_REGION)

    def _credentials_now(self) -> Any:
        if self._credentials is not None:
            return self._credentials
        try:
            from botocore.credentials import Credentials
            from botocore.session import get_session
        except ImportError as exc:  # pragma: no cover - botocore ships with boto3
            raise NoAwsCredentials("botocore is not installed: pip install botocore") from exc
        env = self._environ
        key, secret = env.get(ev.AWS_ACCESS_KEY_ID), env.get(ev.AWS_SECRET_ACCESS_KEY)
        if key and secret and ev.PLACEHOLDER_KEY not in (key, secret):
            self._credentials = Credentials(key, secret, env.get(ev.AWS_SESSION_TOKEN) or None)
        else:
            found = get_session().get_credentials()
            if found is None:
                raise NoAwsCredentials("none in the environment or the AWS configuration")
            self._credentials = found
        return self._credentials

    def sign(
        self,
        service: str,
        region: str,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
    ) -> dict[str, str]:
        """The headers to send ``body`` to ``url`` with: the agent's, less its signature,
        plus a signature of the gateway's own."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        clean = {k: v for k, v in headers.items() if k.lower() not in _SIGNATURE}
        request = AWSRequest(method=method, url=url, data=body, headers=clean)
        SigV4Auth(self._credentials_now(), service, region).add_auth(request)
        return dict(request.headers.items())
