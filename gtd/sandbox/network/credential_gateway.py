"""The model credential gateway: the agent holds a placeholder, the host puts the real key in.

The CLI inside the sandbox gets a per-session placeholder wherever it would hold a model API key
(its environment, the config gtd writes, claude's login file) and a base URL that points at this
gateway, reached over plain HTTP at 127.0.0.1:GATEWAY_PORT inside the sandbox (a listener made in
the sandbox's own network namespace, served from the host like the proxy port: netns.py). For each
request the gateway:

- takes the route from the first path segment (`/anthropic/v1/messages`) and forwards the rest to
  that route's upstream, fixed when the session started (never a host the request names);
- replaces the route's placeholder with the real credential in the auth header only (`x-api-key`,
  `Authorization: Bearer`, `x-goog-api-key`, `api-key`), and refuses a request carrying another
  route's placeholder there (reported as misuse);
- speaks TLS upstream (plain HTTP for an `http://` upstream such as a local model server), and passes
  the response through as it comes, so a streamed (SSE) answer is never held back.

Nothing that carries a real key is ever written inside the sandbox. The proxy (proxy.py) asks
`find_placeholder` about every plain-HTTP request it forwards: the placeholder going anywhere else is
refused as an attempt to exfiltrate it.
"""

from __future__ import annotations

import os
import socket
import threading

from gtd.record import field, record
from gtd.sandbox.network.relay import ConnectionCap, close_all

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Callable, Mapping

GATEWAY_PORT = 3129  # inside the sandbox's own network namespace, beside the proxy's 3128
PLACEHOLDER_PREFIX = "gtd-placeholder-"
# Connections served at once (a CLI opens a few; more is an agent holding host threads open): the rest are closed.
MAX_CONNECTIONS = 64
# The base URL variables the CLIs read, pointed at the gateway inside the sandbox: variable -> route.
BASE_URL_VARS = {"ANTHROPIC_BASE_URL": "anthropic", "OPENAI_BASE_URL": "openai"}


@record(frozen=True)
class GatewayRoute:
    """One model API behind the gateway. `secrets`: the environment variables whose value this route may
    carry upstream; `login`: an object with `.token() -> str` (claude's subscription login, refreshed on the
    host) and `.name` (what it is, for messages)."""

    name: str
    upstream: str
    secrets: tuple[str, ...] = ()
    login: object | None = field(default=None, compare=False, repr=False)
    origin: str = ""
    # Real values for variables that are not in the host's environment (a key in the person's CLI config).
    values: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)
    # A host-side signer for a cloud API (Bedrock's SigV4, Vertex's access token: providers/cloud_routes.py):
    # `.name`, `.sign(method, url, headers, body) -> headers to add` and `.upstream(path) -> url`. The CLI holds
    # the route's placeholder in its auth header; the signer replaces that header with the real authorization.
    signer: object | None = field(default=None, compare=False, repr=False)
    # What the CLI is told inside, (variable, template): "{url}" is the route's gateway URL, "{placeholder}"
    # the route's login or signer placeholder (a cloud route's switches: claude's ANTHROPIC_BEDROCK_BASE_URL).
    env: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict:
        stand_ins = [getattr(x, "name", "login") for x in (self.login, self.signer) if x is not None]
        return {"route": self.name, "upstream": self.upstream, "credentials": list(self.secrets) + stand_ins,
                "origin": self.origin}

    @property
    def host_credential(self):
        """The host-side login or signer whose placeholder the CLI holds, or None."""
        return self.login if self.login is not None else self.signer


def make_placeholder(real: str | None = None) -> str:
    """A per-session stand-in for a credential: random, never equal to (or part of) the real one."""
    while True:
        value = PLACEHOLDER_PREFIX + os.urandom(20).hex()
        if value != real and (len(real or "") < 20 or real not in value):  # a key shorter than that is no key
            return value


def gateway_url(route: str, port: int = GATEWAY_PORT) -> str:
    """The base URL the CLI inside the sandbox is given instead of the route's upstream."""
    return f"http://127.0.0.1:{port}/{route}"


class CredentialGateway:
    """One per sandbox session. `environ`: where the real keys are read (once, at the session's start)."""

    def __init__(self, routes: tuple[GatewayRoute, ...] | list[GatewayRoute], *,
                 environ: Mapping[str, str] | None = None,
                 on_misuse: Callable[[str, str], None] | None = None):
        environ = os.environ if environ is None else environ
        self.routes = {r.name: r for r in routes}
        self._on_misuse = on_misuse
        self.env_placeholders: dict[str, str] = {}  # variable -> its placeholder
        self._real: dict[str, tuple[str, str]] = {}  # placeholder -> (route, the variable it stands for)
        self._secrets: set[str] = set()  # every real value, for scrubbing what comes back
        self.login_placeholders: dict[str, str] = {}  # route -> the login's placeholder access token
        self._env_real: dict[str, str] = {}  # variable -> its real value, as it was at the session's start
        for route in routes:
            for var in route.secrets:
                value = dict(route.values).get(var) or environ.get(var)
                if not value or var in self.env_placeholders:
                    continue
                placeholder = make_placeholder(value)
                self.env_placeholders[var] = placeholder
                self._real[placeholder] = (route.name, var)
                self._secrets.add(value)
                self._env_real[var] = value
            if route.host_credential is not None:
                placeholder = make_placeholder()
                self.login_placeholders[route.name] = placeholder
                self._real[placeholder] = (route.name, "")
        self._listeners: dict[socket.socket, object] = {}  # each listener's accept thread (gtd.background)
        self._cap = ConnectionCap(MAX_CONNECTIONS)
        self._lock = threading.Lock()

    # -- what the session and the proxy ask ----------------------------------------------------
    def placeholders(self) -> list[str]:
        return list(self._real)

    def find_placeholder(self, data: bytes | str) -> str | None:
        """What the placeholder in `data` stands for ("ANTHROPIC_API_KEY", "claude's subscription login"), or None."""
        text = data.decode("latin-1") if isinstance(data, bytes) else data
        if PLACEHOLDER_PREFIX not in text:
            return None
        for placeholder, (route, var) in self._real.items():
            if placeholder in text:
                return var or getattr(self.routes[route].host_credential, "name", "login")
        return None

    def scrub(self, text: str) -> str:
        """`text` with every real key replaced by a mark (an upstream error that echoes the key)."""
        logins = [getattr(r.login, "last", None) for r in self.routes.values() if r.login is not None]
        for route in self.routes.values():
            if route.signer is not None:
                try:
                    logins += route.signer.secrets()
                except Exception:  # noqa: BLE001 - credentials that cannot be read hold nothing to scrub
                    pass
        for secret in (*self._secrets, *(t for t in logins if t)):
            if secret and secret in text:
                text = text.replace(secret, "[model API key removed by gtd]")
        return text

    # -- serving -------------------------------------------------------------------------------
    def serve(self, listener: socket.socket) -> None:
        from gtd.background import Background

        with self._lock:
            self._listeners[listener] = Background(self._accept_loop, listener, on_error=Background.report)

    def stop_serving(self, listener: socket.socket) -> None:
        """Stop accepting; the accept thread is gone before the caller closes the descriptor."""
        with self._lock:
            thread = self._listeners.pop(listener, None)
        try:
            listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if thread is not None:
            thread.join(5)

    def _accept_loop(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            self._cap.spawn(self._handle, conn)

    def _handle(self, conn: socket.socket) -> None:
        from gtd.sandbox.network.credential_forward import forward

        try:
            conn.settimeout(60)
            forward(self, conn)
        except (OSError, ValueError):
            pass
        finally:
            close_all(conn)

    def real_credential(self, route: str, value: str) -> tuple[str | None, str | None]:
        """(the header value with the route's placeholder replaced by the real credential, misuse) for one
        auth header's value. A placeholder of another route is misuse: (None, why)."""
        for placeholder, (owner, var) in self._real.items():
            if placeholder not in value:
                continue
            if owner != route:
                what = var or "a login"
                reason = (f"the placeholder for {what} was sent to the gateway's {route!r} route; it is only "
                          f"exchanged for the real credential on its own model API ({owner})")
                self.misuse(route, reason)
                return None, reason
            if not var and self.routes[route].signer is not None:
                continue  # the signer replaces the whole header (credential_forward)
            try:
                real = self._env_real.get(var) if var else self.routes[route].login.token()
            except Exception as exc:  # noqa: BLE001 - a login that cannot be refreshed: the CLI hears why
                return None, str(exc)
            if not real:
                return None, f"{var or 'the login'} has no value on the host any more"
            value = value.replace(placeholder, real)
        return value, None

    def login_files(self) -> list[tuple[str, bytes]]:
        """(where the CLI looks for its login, the placeholder login file's bytes) for each login route."""
        return [(str(self.routes[name].login.target), self.routes[name].login.stand_in(placeholder).encode())
                for name, placeholder in self.login_placeholders.items() if self.routes[name].login is not None]

    def route_env(self, urls: Mapping[str, str]) -> dict[str, str]:
        """What each route tells the CLI inside (GatewayRoute.env), filled in with its URL and placeholder."""
        env: dict[str, str] = {}
        for name, route in self.routes.items():
            for var, template in route.env:
                env[var] = template.replace("{url}", urls.get(name, "")).replace(
                    "{placeholder}", self.login_placeholders.get(name, ""))
        return env

    def misuse(self, route: str, reason: str) -> None:
        if self._on_misuse is not None:
            try:
                self._on_misuse(route, reason)
            except Exception:  # noqa: BLE001 - reporting must not break the gateway
                pass
