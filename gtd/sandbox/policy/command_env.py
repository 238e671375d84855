"""The environment of a sandboxed command: a minimal base, gtd's proxy, the person's TLS trust settings,
and the provider's own credential variables; never the rest of the host's environment."""

from __future__ import annotations

import os

from gtd.sandbox.policy.containment import inside

BASE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "USER", "LOGNAME", "TZ")
# Where the person's TLS clients find their trusted CAs. On machines behind a TLS-inspecting
# gateway (most corporate networks) every HTTPS client fails without these, so dropping them would
# be a false denial. They name certificate bundles, never secrets, and pass only when they name a
# path the sandbox can read (see `tls_trust`).
TLS_TRUST_VARS = (
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "PIP_CERT", "UV_NATIVE_TLS", "NIX_SSL_CERT_FILE", "CARGO_HTTP_CAINFO",
    "NPM_CONFIG_CAFILE", "npm_config_cafile", "HTTPLIB2_CA_CERTS", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
    "AWS_CA_BUNDLE", "DENO_CERT",
)
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
# No ALL_PROXY: clients read it as "SOCKS for everything" and some then fail outright (httpx, and so
# the Python SDKs built on it, without the optional socksio). The SOCKS5 endpoint stays on the proxy
# port for clients configured to use it; other protocols are caught on the intercepted ports.
# Loopback inside the sandbox is the sandbox's own: every client connects there directly. Spelled
# for each client's matcher: exact names (Python, wget), suffixes (`.localhost`), CIDR (curl, Go).
NO_PROXY = "localhost,.localhost,127.0.0.1,127.0.0.0/8,::1"  # no "[::1]": httpx rejects it


def tls_trust(environ, deny_read) -> dict[str, str]:
    """The TLS trust variables worth passing: a flag (`UV_NATIVE_TLS=1`) or an absolute path that
    exists and is not hidden from the sandbox (a hidden bundle would only turn into a confusing
    verification error)."""
    found: dict[str, str] = {}
    passes: dict[str, bool] = {}  # by value: a machine often names one bundle in a dozen of them
    for key in TLS_TRUST_VARS:
        value = environ.get(key, "")
        if not value:
            continue
        if key == "UV_NATIVE_TLS":
            found[key] = value
            continue
        if value not in passes:
            passes[value] = _readable_bundle(value, deny_read)
        if passes[value]:
            found[key] = value
    return found


def _readable_bundle(value: str, deny_read) -> bool:
    """An absolute path that exists and is not hidden from the sandbox (by its own spelling or resolved)."""
    try:
        real = os.path.realpath(value)
    except OSError:  # leads where gtd may not resolve: not passed
        return False
    if not os.path.isabs(value) or not os.path.exists(real):
        return False
    spellings = {real, os.path.normpath(value)}
    return not any(inside(p, d) for d in deny_read for p in spellings)
