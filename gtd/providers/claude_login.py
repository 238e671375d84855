"""Claude's subscription login, kept on the host: the CLI inside gets a placeholder login file, and gtd's
credential gateway puts the real OAuth access token into each model request (sandbox/network/credential_gateway.py).

The person's login (`~/.claude/.credentials.json`, written by `claude` + /login) is read on the host only.
The placeholder file gtd gives the CLI holds the same account fields with both tokens replaced, and an
expiry far ahead, so claude inside never tries a refresh (it could not save one, and a refresh token is
single-use). When the real access token is about to expire, gtd refreshes it on the host, as claude would,
and saves the new tokens to the person's file; if that cannot be done (offline, a revoked login), the run
stops before the agent starts, saying how to log in again.

On macOS, where claude keeps its login in the Keychain when there is no such file, claude_keychain.py reads
and writes it there instead (a subclass of ClaudeLogin).
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path

from gtd.errors import GtdError

TOKEN_URL = "https://platform.claude.com/v1/oauth/token"  # as the pinned claude refreshes
CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"  # Claude Code's public OAuth client
EXPIRY_MARGIN_SECONDS = 300  # a token this close to its expiry is refreshed first: too close to run on
STAND_IN_SECONDS = 365 * 24 * 3600  # the placeholder's expiry: far enough that claude never refreshes inside


class ClaudeLogin:
    """The person's login file (`source`), for a CLI that looks for its login at `target`."""

    name = "claude's subscription login"

    def __init__(self, source: Path, target: Path):
        self.source, self.target = source, target
        self._lock = threading.Lock()
        self.last: str | None = None  # the token last put in (the gateway scrubs it from what comes back)

    # -- the host's side ----------------------------------------------------------------------
    def _read(self) -> dict:
        data = read_login_file(self.source)
        if not isinstance(data, dict) or not isinstance(data.get("claudeAiOauth"), dict):
            raise GtdError(f"{self.source} holds no Claude login (claudeAiOauth): log in with `claude` and /login")
        return data

    def token(self, now: float | None = None) -> str:
        """The real access token, refreshed on the host first when it expires within EXPIRY_MARGIN_SECONDS."""
        with self._lock:
            data = self._read()
            oauth = data["claudeAiOauth"]
            expires = oauth.get("expiresAt")
            now = time.time() if now is None else now
            if isinstance(expires, (int, float)) and expires / 1000 <= now + EXPIRY_MARGIN_SECONDS:
                oauth = self._refresh(data)
            token = oauth.get("accessToken")
            if not isinstance(token, str) or not token:
                raise GtdError("your Claude login has no access token: log in again with `claude` and /login")
            self.last = token
            return token

    def _refresh(self, data: dict) -> dict:
        """New tokens from Anthropic's OAuth endpoint, saved to the person's file (the old refresh token is
        spent). Raises GtdError saying what to do when that cannot be done."""
        oauth = data["claudeAiOauth"]
        try:
            answer = _post_json(os.environ.get("GTD_CLAUDE_TOKEN_URL") or TOKEN_URL, {
                "grant_type": "refresh_token", "refresh_token": oauth.get("refreshToken"), "client_id": CLIENT_ID,
                **({"scope": " ".join(oauth["scopes"])} if isinstance(oauth.get("scopes"), list) else {})})
            fresh = {**oauth, "accessToken": answer["access_token"],
                     "refreshToken": answer.get("refresh_token") or oauth.get("refreshToken"),
                     "expiresAt": int((time.time() + float(answer.get("expires_in") or 3600)) * 1000)}
            self._write({**data, "claudeAiOauth": fresh})
        except (OSError, ValueError, KeyError, TypeError) as exc:
            when = oauth.get("expiresAt")
            shown = time.strftime("%Y-%m-%d %H:%M", time.localtime(when / 1000)) if isinstance(when, (int, float)) else "?"
            raise GtdError(
                f"your Claude login's access token expired ({shown}) and gtd could not refresh it on this machine "
                f"({type(exc).__name__}: {exc}). Run `claude -p hi` once outside gtd to refresh it (or set "
                f"ANTHROPIC_API_KEY), then run gtd again") from None
        return fresh

    def _write(self, data: dict) -> None:
        """Save a refreshed login where it was read (OSError when that fails)."""
        _save(self.source, data)

    # -- what the sandbox sees ----------------------------------------------------------------
    def stand_in(self, placeholder: str) -> str:
        """The placeholder login file: the account's fields, both tokens replaced, an expiry far ahead."""
        try:
            oauth = dict(self._read()["claudeAiOauth"])
        except (OSError, ValueError, GtdError):
            oauth = {}
        oauth.update(accessToken=placeholder, refreshToken=placeholder,
                     expiresAt=int((time.time() + STAND_IN_SECONDS) * 1000))
        return json.dumps({"claudeAiOauth": oauth})


def read_login_file(path) -> object:
    """The login file's JSON, read without following a FIFO into a wait (O_NONBLOCK) and only from a regular
    file; GtdError otherwise, OSError or ValueError when it cannot be read or parsed."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO there never blocks gtd
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise GtdError(f"{path} is not a regular file: gtd cannot read your Claude login from it")
        return json.loads(os.read(fd, 1 << 20))
    finally:
        os.close(fd)


def _post_json(url: str, body: dict) -> dict:
    import urllib.request

    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=20) as response:  # noqa: S310 - https by default
        answer = json.loads(response.read(1 << 20))
    if not isinstance(answer, dict) or not isinstance(answer.get("access_token"), str):
        raise ValueError("the OAuth endpoint's answer holds no access token")
    return answer


def _save(path: Path, data: dict) -> None:
    """Replace the person's login file atomically, readable by them only (as claude writes it)."""
    import tempfile

    real = Path(os.path.realpath(path))  # a dotfile manager's link stays a link
    fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, real)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
