"""TLS on the gateway's own port, for clients that dial only ``wss://`` (or ``https://``).

A certificate authority is made for this process: an EC P-256 key held in memory only
(never written), its certificate constrained to loopback names (``localhost``,
``127.0.0.0/8``, ``::1``), so trusting it trusts nothing else. Its certificate, public,
is written to a temporary folder (removed as the process ends) for the agent's
environment: ``NODE_EXTRA_CA_CERTS`` for Node, ``SSL_CERT_FILE`` (the bundle Python's
``ssl`` would read, with the authority's certificate added) for Python clients such as
``google-genai``. The gateway's own certificate (for the loopback names and the address
it is bound to) is signed when the first TLS connection arrives.
"""

from __future__ import annotations

import atexit
import datetime
import ipaddress
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ssl

__all__ = ["TLS_RECORD", "LocalAuthority", "authority", "tls_environment"]

TLS_RECORD = 0x16
"""The first byte of a TLS handshake record (a client's hello)."""

_DAY = datetime.timedelta(days=1)
_NAMES = ("localhost",)
_NETWORKS = ("127.0.0.0/8", "::1/128")
_USAGES = (
    "digital_signature",
    "content_commitment",
    "key_encipherment",
    "data_encipherment",
    "key_agreement",
    "key_cert_sign",
    "crl_sign",
    "encipher_only",
    "decipher_only",
)


def _loopback_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    return address if address.is_loopback else None


class LocalAuthority:
    """This process's authority: made, and its certificate written, at first need."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._made: tuple[Any, Any] | None = None  # the key (memory only), the certificate
        self._folder: Path | None = None
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._environments: dict[tuple[str | None, str | None], dict[str, str]] = {}
        self.handed_out = False  # an agent was given the variables that trust it

    def _authority(self) -> tuple[Any, Any]:
        if self._made is None:
            self._made = _make_authority()
        return self._made

    def _files(self) -> Path:
        """The folder holding ``ca.pem`` (the authority's certificate)."""
        if self._folder is None:
            from cryptography.hazmat.primitives.serialization import Encoding

            folder = Path(tempfile.mkdtemp(prefix="otel-replay-tls-"))
            atexit.register(shutil.rmtree, folder, True)
            (folder / "ca.pem").write_bytes(self._authority()[1].public_bytes(Encoding.PEM))
            self._folder = folder
        return self._folder

    def prepare(self) -> None:
        """Make the authority and write its certificate on a thread of their own (what
        ``environment`` then waits for), while the caller starts the gateway."""
        threading.Thread(target=self.certificate_file, name="otel-replay-tls", daemon=True).start()

    def certificate_file(self) -> Path:
        """The authority's certificate (PEM), written once."""
        with self._lock:
            return self._files() / "ca.pem"

    def environment(self, caller: Mapping[str, str]) -> dict[str, str]:
        """The variables that have the agent's Node and Python clients trust the gateway,
        keeping what they trusted before (``caller``: the agent's environment)."""
        bases = (caller.get("NODE_EXTRA_CA_CERTS"), _python_bundle(caller))
        with self._lock:
            known = self._environments.get(bases)
            if known is None:  # each file written once: an agent may be reading it
                folder = self._files()
                ca = (folder / "ca.pem").read_bytes()
                node = _bundle(folder / f"node-{len(self._environments)}.pem", bases[0], ca)
                python = _bundle(folder / f"bundle-{len(self._environments)}.pem", bases[1], ca)
                known = {"NODE_EXTRA_CA_CERTS": str(node), "SSL_CERT_FILE": str(python)}
                self._environments[bases] = known
            self.handed_out = True
        return dict(known)

    def server_context(self, host: str) -> ssl.SSLContext:
        """The server side's context for a gateway bound to ``host`` (its certificate
        signed at the first call)."""
        with self._lock:
            context = self._contexts.get(host)
            if context is None:
                context = self._contexts[host] = _server_context(self._authority(), host)
            return context


def _bundle(path: Path, base: str | None, ca: bytes) -> Path:
    """``path`` holding the certificates of the file ``base`` (when readable) and ``ca``."""
    if not base:
        return path.parent / "ca.pem"
    try:
        before = Path(base).read_bytes()
    except OSError:
        return path.parent / "ca.pem"
    path.write_bytes(before.rstrip(b"\n") + b"\n" + ca)
    return path


def _python_bundle(caller: Mapping[str, str]) -> str | None:
    """The bundle Python's ``ssl`` reads by default for ``caller``'s process (its
    ``SSL_CERT_FILE``, else OpenSSL's file), else ``certifi``'s."""
    import ssl

    given = caller.get("SSL_CERT_FILE")
    if given:
        return given
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile):
        if candidate and os.path.isfile(candidate):
            return candidate
    try:
        import certifi
    except ImportError:
        return None
    where: str = certifi.where()
    return where


def _make_authority() -> tuple[Any, Any]:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "otel-replay gateway (local)")])
    permitted: list[x509.GeneralName] = [x509.DNSName(n) for n in _NAMES]
    permitted += [x509.IPAddress(ipaddress.ip_network(n)) for n in _NETWORKS]
    usage = dict.fromkeys(_USAGES, False) | {"key_cert_sign": True, "crl_sign": True}
    extensions = [
        (x509.BasicConstraints(ca=True, path_length=0), True),
        (x509.KeyUsage(**usage), True),
        (x509.NameConstraints(permitted, None), True),
        (x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False),
    ]
    certificate = _signed(name, name, key.public_key(), key, extensions)
    return key, certificate


def _signed(
    subject: Any, issuer: Any, public_key: Any, signer: Any, extensions: list[tuple[Any, bool]]
) -> Any:
    """A certificate of ``public_key`` for ``subject``, signed by ``issuer``'s ``signer``,
    valid for 30 days from yesterday."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + 30 * _DAY)
    )
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical=critical)
    return builder.sign(signer, hashes.SHA256())


def _server_context(made: tuple[Any, Any], host: str) -> ssl.SSLContext:
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_key, ca = made
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in _NAMES]
    addresses = {ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")}
    bound = _loopback_address(host)
    if bound is not None:
        addresses.add(bound)
    names += [x509.IPAddress(a) for a in sorted(addresses, key=str)]
    extensions = [
        (x509.SubjectAlternativeName(names), False),
        (x509.BasicConstraints(ca=False, path_length=None), True),
        (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False),
        (x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False),
    ]
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    certificate = _signed(subject, ca.subject, key.public_key(), ca_key, extensions)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    _load_chain(context, key, certificate)
    return context


def _load_chain(context: ssl.SSLContext, key: Any, certificate: Any) -> None:
    """``context.load_cert_chain`` reads files only: the key goes through a pipe, never to
    disk (the certificate, public, through the same)."""
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
    )

    pipes = [os.pipe(), os.pipe()]
    try:
        for (_, write), pem in zip(
            pipes,
            (
                certificate.public_bytes(Encoding.PEM),
                key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()),
            ),
            strict=True,
        ):
            with os.fdopen(write, "wb") as out:  # a few hundred bytes: a pipe holds them
                out.write(pem)
        context.load_cert_chain(f"/dev/fd/{pipes[0][0]}", f"/dev/fd/{pipes[1][0]}")
    finally:
        for read, _ in pipes:
            os.close(read)


_AUTHORITY = LocalAuthority()


def authority() -> LocalAuthority:
    """This process's authority (one for all its gateways)."""
    return _AUTHORITY


def tls_environment(caller: Mapping[str, str]) -> dict[str, str]:
    """The variables that have an agent started with ``caller``'s environment trust the
    gateway's TLS (see :class:`LocalAuthority`)."""
    return _AUTHORITY.environment(caller)
