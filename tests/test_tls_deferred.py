"""The CLI's gateway does not read the certificate bundle as aiohttp loads (its default TLS
contexts read it at their first handshake), and still verifies: a forward over TLS to a
server whose certificate the bundle vouches for succeeds, one the bundle does not know
fails. The bundle is a CA made here, given as ``SSL_CERT_FILE`` (what OpenSSL reads for its
default locations); a fresh interpreter each, since this one has aiohttp loaded."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CLIENT = """
import asyncio, json, ssl, sys
from otel_replay.gateway.tls import defer_bundles
defer_bundles()
import aiohttp, aiohttp.connector as connector
from aiohttp import web

verified, unverified = connector._SSL_CONTEXT_VERIFIED, connector._SSL_CONTEXT_UNVERIFIED
before = [vars(verified).get("_deferred"), vars(unverified).get("_deferred")]
mine = ssl.create_default_context()  # made after the import: read at once, as always

async def fetch(cert, key):
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    app = web.Application()
    app.router.add_get("/", lambda request: web.Response(text="hello"))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    try:
        async with aiohttp.ClientSession() as client:
            async with client.get(f"https://localhost:{port}/") as answer:
                return await answer.text()
    except aiohttp.ClientConnectorCertificateError:
        return "refused"
    finally:
        await runner.cleanup()

async def main():
    known = await fetch(sys.argv[1], sys.argv[2])
    unknown = await fetch(sys.argv[3], sys.argv[4])
    print(json.dumps({
        "before": before,
        "after": vars(verified).get("_deferred"),
        "kind": type(verified).__name__,
        "plain": type(mine) is ssl.SSLContext and mine.cert_store_stats()["x509_ca"],
        "stdlib": "set_default_verify_paths" not in vars(ssl.SSLContext),
        "known": known,
        "unknown": unknown,
    }))

asyncio.run(main())
"""


def _name(text: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def _authority(folder: Path, name: str) -> tuple[Path, Path, Path]:
    """A CA (its certificate file) and a server certificate for localhost it signed."""
    now = datetime.datetime.now(datetime.UTC)
    valid = (now - datetime.timedelta(days=1), now + datetime.timedelta(days=1))
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(f"{name} CA"))
        .issuer_name(_name(f"{name} CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    paths = folder / f"{name}-ca.pem", folder / f"{name}.pem", folder / f"{name}.key"
    paths[0].write_bytes(ca.public_bytes(pem))
    paths[1].write_bytes(leaf.public_bytes(pem))
    paths[2].write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


def test_the_bundle_is_read_at_the_first_handshake_and_still_verifies(tmp_path: Path) -> None:
    bundle, cert, key = _authority(tmp_path, "known")
    _, stranger, stranger_key = _authority(tmp_path, "unknown")
    env = {**os.environ, "SSL_CERT_FILE": str(bundle), "SSL_CERT_DIR": str(tmp_path / "none")}
    out = subprocess.run(
        [sys.executable, "-c", CLIENT, str(cert), str(key), str(stranger), str(stranger_key)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["before"] == [True, True]  # made without reading the bundle
    assert seen["kind"] == "DeferredContext"
    assert seen["known"] == "hello"  # read at the handshake: the CA it names vouches
    assert seen["after"] is False
    assert seen["unknown"] == "refused"  # still verified
    assert seen["plain"] == 1  # a context made later reads its bundle as it is made
    assert seen["stdlib"] is True  # ssl's own class is as it was


def test_the_command_line_defers_the_bundle() -> None:
    probe = (
        "import sys\n"
        "from otel_replay.frontends import cli\n"
        "sys.argv = ['otel-replay', 'serve', '--mode', 'off']\n"
        "cli.main()\n"
        "import aiohttp.connector as c\n"
        "print(type(c._SSL_CONTEXT_VERIFIED).__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.splitlines()[-1] == "DeferredContext"
