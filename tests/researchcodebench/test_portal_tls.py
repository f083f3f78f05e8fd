"""``rcb``'s calls to the portal over TLS trust the CA file the environment names, ``SSL_CERT_FILE`` included
(requests alone ignores it): behind a TLS proxy whose CA only the system bundle holds, the client must work.

A real HTTPS server on 127.0.0.1 with a certificate from a throwaway CA (made with ``openssl``)."""

from __future__ import annotations

import http.server
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from researchcodebench.cli import main

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the test's CA")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> Path:
    """A CA (``ca.pem``) and a certificate it signed for 127.0.0.1 (``server.pem``, ``server.key``)."""
    d = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
             "-days", "2", "-subj", "/CN=rcb test CA", cwd=d)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=127.0.0.1", cwd=d)  # fmt: skip
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf", cwd=d)  # fmt: skip
    return d


@pytest.fixture
def portal(tls) -> Iterator[tuple[str, list[str]]]:
    """An HTTPS server answering every GET with a 404 JSON, and the paths it was asked for."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            body = b'{"detail": "no such release"}'
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls / "server.pem", tls / "server.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"])
def test_the_client_trusts_the_ca_the_environment_names(portal, tls, tmp_path, monkeypatch, capsys, variable):
    url, asked = portal
    for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, str(tls / "ca.pem"))
    assert main(["download", "rms", "--portal", url, "--output", str(tmp_path / "out")]) == 2
    # The TLS handshake passed: the portal was asked and its refusal is what the client reports.
    assert asked == ["/releases/rms/download/"]
    assert capsys.readouterr().err.startswith("error: the portal has no release 'rms' (")


def test_without_the_ca_the_client_refuses_the_certificate(portal, tmp_path, monkeypatch, capsys):
    url, asked = portal
    for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    assert main(["download", "rms", "--portal", url, "--output", str(tmp_path / "out")]) == 3
    assert asked == []
    assert capsys.readouterr().err == (
        f"error: cannot reach the portal at {url}: its certificate is not trusted (name the CA file in "
        "REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE or SSL_CERT_FILE)\n"
    )
