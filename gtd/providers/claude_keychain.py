"""Claude's subscription login on macOS, kept in the Keychain: read and written on the host with `security`.

On macOS Claude Code keeps its login as a generic password (service "Claude Code-credentials", account the
user name), not in ~/.claude/.credentials.json. gtd's credential gateway reads it there, on the host only: the
seatbelt profile denies the Keychain's services and files to every sandboxed command. A refreshed login is
written back as claude writes it, so the person's own claude stays logged in.

`security` is run by its absolute path (never one found on a PATH the agent can write), without a shell, with
a timeout. The refreshed tokens go to it on stdin (`security -i`), not on its command line, which every local
process can read; only a login too long for one of its input lines goes on the command line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import time
import unicodedata
from pathlib import Path

from gtd.errors import GtdError
from gtd.providers.claude_login import EXPIRY_MARGIN_SECONDS, ClaudeLogin

SECURITY = "/usr/bin/security"
SERVICE = "Claude Code-credentials"  # claude's name for its login item (OAuth, production)
TIMEOUT_SECONDS = 10  # as long as claude itself waits for `security`
ITEM_NOT_FOUND = 44  # security(1)'s exit status for errSecItemNotFound
LINE_LIMIT = 4000  # `security -i` reads commands in lines of at most 4096 bytes
ACCOUNT_CHARS = re.compile(r"^[a-zA-Z0-9._-]+$")
RELOGIN = "log in with `claude` and /login outside gtd, or set ANTHROPIC_API_KEY"


def service_name(environ=None) -> str:
    """The item's service, as claude names it: with CLAUDE_CONFIG_DIR set, the first 8 hex digits of that
    directory's SHA-256 are added, so each config dir has a login of its own."""
    config_dir = (os.environ if environ is None else environ).get("CLAUDE_CONFIG_DIR")
    if not config_dir:
        return SERVICE
    digest = hashlib.sha256(unicodedata.normalize("NFC", config_dir).encode()).hexdigest()[:8]
    return f"{SERVICE}-{digest}"


def account_name(environ=None) -> str:
    """The item's account, as claude names it: $USER (or the login name), "claude-code-user" when that has
    characters outside [A-Za-z0-9._-]."""
    user = (os.environ if environ is None else environ).get("USER")
    if not user:
        import pwd

        try:
            user = pwd.getpwuid(os.getuid()).pw_name
        except KeyError:
            user = ""
    return user if ACCOUNT_CHARS.match(user) else "claude-code-user"


def _security(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run `security` on the host, in gtd's own environment (never the sandbox's); GtdError when it cannot be
    run at all."""
    try:
        return subprocess.run([SECURITY, *args], input=stdin, capture_output=True, text=True, timeout=TIMEOUT_SECONDS,
                              stdin=None if stdin is not None else subprocess.DEVNULL)
    except FileNotFoundError:
        raise GtdError(f"{SECURITY} not found: gtd cannot read your Claude login from the macOS Keychain. "
                       f"Restore it (it ships with macOS), or set ANTHROPIC_API_KEY") from None
    except subprocess.TimeoutExpired:
        raise GtdError(f"{SECURITY} did not answer within {TIMEOUT_SECONDS} s (a locked Keychain waiting for its "
                       f"password?): unlock it, or set ANTHROPIC_API_KEY") from None
    except OSError as exc:
        raise GtdError(f"cannot run {SECURITY} ({exc}): set ANTHROPIC_API_KEY instead") from None


def has_login(service: str, account: str) -> bool:
    """Whether the Keychain holds the item (its password is not read: `security` prints only its attributes)."""
    try:
        return _security(["find-generic-password", "-a", account, "-s", service]).returncode == 0
    except GtdError:
        return False


def read_login(service: str, account: str) -> dict:
    """The login's JSON (as in .credentials.json) from the Keychain; GtdError saying what to do otherwise."""
    result = _security(["find-generic-password", "-a", account, "-w", "-s", service])
    where = f"the macOS Keychain (service {service!r}, account {account!r})"
    if result.returncode == ITEM_NOT_FOUND:
        raise GtdError(f"no Claude login in {where}: {RELOGIN}")
    if result.returncode != 0:
        said = result.stderr.strip().splitlines()[-1:] or [f"exit status {result.returncode}"]
        raise GtdError(f"{SECURITY} could not read your Claude login from {where} ({said[0]}): {RELOGIN}")
    text = result.stdout.strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
        if re.fullmatch(r"(?:[0-9a-fA-F]{2})+", text):  # `-w` prints a password it cannot show as text in hex
            try:
                data = json.loads(bytes.fromhex(text))
            except ValueError:
                pass
    if not isinstance(data, dict) or not isinstance(data.get("claudeAiOauth"), dict):
        raise GtdError(f"the Claude login in {where} is not a login gtd can read (not JSON with claudeAiOauth): "
                       f"{RELOGIN}")
    return data


def write_login(service: str, account: str, data: dict) -> None:
    """Replace the item's password with `data` (hex-encoded, as claude writes it). OSError when it fails."""
    encoded = json.dumps(data).encode().hex()
    line = f'add-generic-password -U -a "{account}" -s "{service}" -X "{encoded}"\n'
    if len(line) <= LINE_LIMIT:
        result = _security(["-i"], stdin=line)
    else:
        result = _security(["add-generic-password", "-U", "-a", account, "-s", service, "-X", encoded])
    said = result.stderr.strip().splitlines()[-1:] or [f"exit status {result.returncode}"]
    if result.returncode != 0:
        raise OSError(f"{SECURITY} could not save the refreshed login to the macOS Keychain: {said[0]}")
    # `security -i` may end with status 0 although a command failed: read it back (the old refresh token is spent).
    try:
        saved = read_login(service, account)["claudeAiOauth"].get("accessToken")
    except GtdError as exc:
        raise OSError(str(exc)) from None
    if saved != data["claudeAiOauth"].get("accessToken"):
        raise OSError(f"{SECURITY} did not save the refreshed login to the macOS Keychain ({said[0]})")


class KeychainLogin(ClaudeLogin):
    """The login in the Keychain, for a CLI that looks for its login at `target`. Read once and kept in memory
    until it is about to expire (each model request would run `security` otherwise); read again then, in case
    the person's own claude refreshed it meanwhile, and refreshed here if it still must be."""

    name = "claude's subscription login from the macOS Keychain"

    def __init__(self, target: Path, service: str | None = None, account: str | None = None):
        self.service = service or service_name()
        self.account = account or account_name()
        super().__init__(f"the macOS Keychain ({self.service})", target)
        self._kept: dict | None = None

    def _read(self) -> dict:
        kept = self._kept
        if kept is not None:
            expires = kept["claudeAiOauth"].get("expiresAt")
            if not isinstance(expires, (int, float)) or expires / 1000 > time.time() + EXPIRY_MARGIN_SECONDS:
                return kept
        self._kept = read_login(self.service, self.account)
        return self._kept

    def _write(self, data: dict) -> None:
        write_login(self.service, self.account, data)
        self._kept = data


def keychain_login(target: Path) -> KeychainLogin | None:
    """The Keychain's login for `target`, when the Keychain holds one."""
    service, account = service_name(), account_name()
    return KeychainLogin(target, service, account) if has_login(service, account) else None
