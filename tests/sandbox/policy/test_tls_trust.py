"""The person's TLS trust settings reach the sandbox: behind a TLS-inspecting gateway (a private CA),
HTTPS clients inside must verify the same certificates they verify outside, or every download at
`network` is a false denial."""

from __future__ import annotations

import subprocess

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.sandbox.policy.command_env import tls_trust as _tls_trust

from sandbox_support import requires_bwrap, sh
from support import serving

HOST = "registry.test"


def _resolver(host: str, port: int) -> list[str]:
    if host == HOST:
        return ["127.0.0.1"]
    raise OSError(f"no such host {host}")


@pytest.fixture
def private_ca_server(home):
    """An HTTPS server whose certificate is signed by a private CA kept in HOME: (port, ca path)."""
    d = home / "ca"
    d.mkdir()

    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=Gateway Test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", f"/CN={HOST}")
    (d / "ext.cnf").write_text(f"subjectAltName=DNS:{HOST}\n")
    openssl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "srv.pem",
            "-days", "2", "-extfile", "ext.cnf")
    with serving(b"TRUSTED-HELLO", certificate=(d / "srv.pem", d / "srv.key")) as port:
        yield port, d / "ca.pem"


@requires_bwrap
@pytest.mark.bwrap
def test_https_clients_inside_trust_the_persons_private_ca(sandbox, repo, private_ca_server, monkeypatch):
    port, ca = private_ca_server
    for var in ("CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"):
        monkeypatch.setenv(var, str(ca))
    # The test server listens on the host's loopback: the name (and the address it resolves to) are
    # allowed explicitly, and its port is caught for node, which ignores proxy variables.
    config = GtdConfig.model_validate({"sandbox": {
        "levels": {"network": {"allowDomains": [f"{HOST}:{port}", f"127.0.0.1:{port}"]}},
        "interceptPorts": [port],
    }})
    s = sandbox(Level.NETWORK, config=config, resolver=_resolver)
    url = f"https://{HOST}:{port}/"
    node = f"require('https').get('{url}', r => r.on('data', d => process.stdout.write(d))).on('error', e => console.log('ERR', e.code))"
    python = f"import urllib.request; print(urllib.request.urlopen('{url}', timeout=10).read().decode())"
    r = sh(s, f"curl -sS --max-time 10 {url}; echo; node -e \"{node}\"; echo; python3 -c \"{python}\"", repo)
    assert r.out.split() == ["TRUSTED-HELLO"] * 3, r.out + r.err


def test_only_readable_bundles_and_no_hidden_paths_pass(tmp_path):
    bundle = tmp_path / "bundle.pem"
    bundle.write_text("x")
    secret_dir = tmp_path / "secrets"
    secret_dir.mkdir()
    (secret_dir / "ca.pem").write_text("x")
    env = {
        "SSL_CERT_FILE": str(bundle),
        "NODE_EXTRA_CA_CERTS": str(secret_dir / "ca.pem"),  # hidden from the sandbox
        "CURL_CA_BUNDLE": str(tmp_path / "missing.pem"),
        "REQUESTS_CA_BUNDLE": "relative.pem",
        "AWS_SECRET_ACCESS_KEY": "not a trust variable",
    }
    assert _tls_trust(env, [secret_dir]) == {"SSL_CERT_FILE": str(bundle)}
