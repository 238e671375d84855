"""A host already refused in this run, refused to pip over TLS, so pip stops at once instead of retrying.

pip (urllib3 1.x, `Retry(total=5, backoff_factor=0.25)`) retries every failed attempt to get a response
from the server: a CONNECT answered 403 or 407, a reset, a TLS alert, a 502. That is 0 + 0.5 + 1 + 2 + 4 s
of sleep per URL whatever the proxy answers (benchmarks/denied_host_retries.sh). Only an HTTP response
from the "server" itself stops it. So, for a host the run has refused before, gtd's proxy answers pip's
CONNECT with 200, completes the TLS handshake with a certificate for that host from a CA made for this
session, and answers the request `403 Forbidden` with gtd's refusal as the body.

Only pip is answered so: the proxy knows a connection is pip's by the user name of the proxy URL gtd gives
pip alone (PIP_PROXY), and pip alone trusts the CA (PIP_CERT names a bundle holding the base bundle and
gtd's CA). Every other client keeps the plain 403, which curl, git and npm give up on at once (npm retries a
certificate it does not trust for over a minute). The CA and its keys are made with the host's `openssl`
at the first refusal of a pip connection, before that refusal is answered (pip's first retry comes
without delay), live in a host directory only gtd reads, and go with the session. Without `openssl` or a
base bundle nothing changes: pip gets the plain 403.
"""

from __future__ import annotations

import os
import subprocess
import threading

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    import socket
    import ssl

PIP_USER = "gtd-pip"  # the proxy user name in PIP_PROXY: the connection is pip's
TRUST_DIR_IN_SANDBOX = "/tmp/.gtd/tls"
BUNDLE = "bundle.pem"
MAX_HEAD = 64 * 1024
# The variables whose bundle pip reads, first match wins: requests lets the first two override pip's --cert
# (PIP_CERT) for every request. gtd points the one in effect, and PIP_CERT, at its own copy with the CA added.
PIP_TRUST_VARS = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT")
SYSTEM_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem",
                  "/etc/ssl/ca-bundle.pem")
CURVE = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def pip_trust(env: dict[str, str]) -> tuple[str, tuple[str, ...]] | None:
    """(the CA bundle pip would trust in the sandbox without gtd, the variables to point at gtd's copy of
    it), or None: no bundle to start from, and gtd leaves pip alone."""
    for key in PIP_TRUST_VARS:
        if env.get(key):
            return (env[key], tuple(dict.fromkeys((key, "PIP_CERT")))) if os.path.isfile(env[key]) else None
    for path in SYSTEM_BUNDLES:
        if os.path.isfile(path):
            return path, ("PIP_CERT",)
    import ssl  # here: most hosts have one of the usual bundles, and ssl costs ~10 ms to import

    default = ssl.get_default_verify_paths().cafile
    return (default, ("PIP_CERT",)) if default and os.path.isfile(default) else None


class TlsRefusals:
    """One per session: the trust directory bound into the sandbox, and the CA that signs refusals."""

    def __init__(self, openssl: str, base: str, trust_vars: tuple[str, ...] = ("PIP_CERT",)):
        self._openssl = openssl
        self._base = base
        self._trust_vars = trust_vars
        self._keys = _private_dir("gtd-tls-keys-")  # 0700, never bound into the sandbox
        self.trust_dir = _private_dir("gtd-tls-trust-")  # bound read-only at TRUST_DIR_IN_SANDBOX
        os.chmod(self.trust_dir, 0o755)  # the bundle is public; the sandbox's user may be mapped to another uid
        self._lock = threading.Lock()
        self._ca_ready: bool | None = None  # None: not tried yet
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._serial = 1
        try:  # until a CA is made, pip reads the base bundle itself (visible inside: tls_trust's rule)
            os.symlink(os.path.abspath(base), os.path.join(self.trust_dir, BUNDLE))
        except OSError:
            self.close()
            raise

    def environment(self, proxy_url: str) -> dict[str, str]:
        """pip's proxy (with its own user name) and its CA bundle inside the sandbox."""
        bundle = f"{TRUST_DIR_IN_SANDBOX}/{BUNDLE}"
        return {"PIP_PROXY": proxy_url.replace("//gtd:", f"//{PIP_USER}:", 1), **{key: bundle for key in self._trust_vars}}

    def bwrap_args(self) -> list[str]:
        return ["--ro-bind", self.trust_dir, TRUST_DIR_IN_SANDBOX]

    def prepare(self) -> bool:
        """Make the CA and put it in pip's bundle (once); whether refusals over TLS are possible."""
        with self._lock:
            if self._ca_ready is None:
                self._ca_ready = self._make_ca()
            return self._ca_ready

    def _run(self, *args: str) -> None:
        subprocess.run([self._openssl, *args], cwd=self._keys, check=True, timeout=20,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _make_ca(self) -> bool:
        try:
            self._run("req", "-x509", *CURVE, "-keyout", "ca.key", "-out", "ca.pem", "-days", "7",
                      "-subj", "/CN=gtd sandbox refusals (this session only)",
                      "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                      "-addext", "subjectKeyIdentifier=hash")
            self._run("req", "-new", *CURVE, "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=gtd sandbox")
            with open(self._base, "rb") as f:
                base = f.read()
            with open(os.path.join(self._keys, "ca.pem"), "rb") as f:
                ca = f.read()
            temp = os.path.join(self.trust_dir, BUNDLE + ".new")
            with open(temp, "wb") as f:
                f.write(base.rstrip(b"\n") + b"\n" + ca)
            os.chmod(temp, 0o644)
            os.replace(temp, os.path.join(self.trust_dir, BUNDLE))  # a reader sees the old or the new, whole
            return True
        except (OSError, subprocess.SubprocessError):
            return False

    def context_for(self, host: str) -> ssl.SSLContext | None:
        """A server context with a certificate for `host` signed by the session's CA, or None."""
        import ssl

        if not self.prepare():
            return None
        with self._lock:
            if host in self._contexts:
                return self._contexts[host]
            serial, self._serial = self._serial, self._serial + 1
            cert, ext = f"leaf-{serial}.pem", f"leaf-{serial}.ext"
            from gtd.sandbox.policy.domains import is_ip

            kind = "IP" if is_ip(host) else "DNS"
            try:
                with open(os.path.join(self._keys, ext), "w") as f:
                    f.write(f"subjectAltName={kind}:{host}\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                            "extendedKeyUsage=serverAuth\nauthorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n")
                self._run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial",
                          str(serial), "-days", "7", "-extfile", ext, "-out", cert)
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.load_cert_chain(os.path.join(self._keys, cert), os.path.join(self._keys, "leaf.key"))
            except (OSError, ssl.SSLError, subprocess.SubprocessError):
                return None
            self._contexts[host] = context
            return context

    def refuse(self, conn: socket.socket, host: str, body: str) -> bool:
        """Answer a CONNECT to `host` with 200, then the request inside TLS with 403 and `body`. False
        (nothing sent) when no certificate could be made: the caller answers the plain 403."""
        import ssl

        context = self.context_for(host)
        if context is None:
            return False
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        conn.settimeout(10)
        try:
            tls = context.wrap_socket(conn, server_side=True)
        except (OSError, ssl.SSLError):
            return True
        try:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < MAX_HEAD:
                chunk = tls.recv(65536)
                if not chunk:
                    break
                head += chunk
            payload = body.encode()
            tls.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                        b"Connection: close\r\n\r\n" % len(payload) + payload)
            tls.settimeout(2)
            tls.unwrap()  # close_notify both ways: the response is not reset away by an early close
        except (OSError, ssl.SSLError, ValueError):
            pass
        finally:
            tls.close()
        return True

    def close(self) -> None:
        for directory in (self._keys, self.trust_dir):  # flat: only files gtd wrote
            try:
                for name in os.listdir(directory):
                    os.unlink(os.path.join(directory, name))
                os.rmdir(directory)
            except OSError:
                pass


def _private_dir(prefix: str) -> str:
    """A new directory of the host's temporary directory, mode 0700 (tempfile.mkdtemp without its ~5 ms
    of imports on every sandbox start)."""
    base = os.environ.get("TMPDIR", "")
    base = base if os.path.isabs(base) and os.path.isdir(base) else "/tmp"
    for _ in range(10):
        path = os.path.join(base, prefix + os.urandom(6).hex())
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(path)
