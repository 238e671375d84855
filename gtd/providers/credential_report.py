"""`gtd doctor`'s "model credentials" row: which of the agent CLI's model credentials stay on the host behind
gtd's credential gateway (sandbox/network/credential_gateway.py), and which still reach the CLI, with why.

Still reaching the CLI: claude's Bedrock or Vertex credentials, and opencode's and pi's Bedrock credentials,
when the host cannot sign for them (no `cloud` extra, no credential on the host: cloud_routes.py,
cli_cloud_routes.py), opencode's and pi's Vertex credentials, a key
variable the CLI is given that no route carries (model_routes.UNROUTED; none of the CLIs' own today: every
built-in provider key they are given is routed whenever it is set), and everything when the sandbox is off
or at `full`. On macOS the gateway listens on the host's loopback (seatbelt has no network namespace to put
it in), and claude's login may come from the Keychain: the row says both.
"""

from __future__ import annotations

import os
import sys


def credential_row(needs, sandboxed: bool = True) -> dict:
    """{"name", "ok", "detail", "fix", "required": False} for `needs` (a providers.base.SandboxNeeds)."""
    behind: list[str] = []
    held: list[str] = []
    routed = {var for route in needs.model_routes for var in route.secrets}
    for route in needs.model_routes:
        names = [v for v in route.secrets if os.environ.get(v) or dict(route.values).get(v)]
        if route.login is not None:
            names.append(f"{route.login.name} (a placeholder login file inside)")
        if route.signer is not None:
            names.append(route.signer.name)
        if names:
            behind.append(f"{route.name} -> {route.upstream}: {', '.join(names)}")
    for cloud, gap in sorted(needs.gateway_gaps.items()):
        held.append(f"{cloud} credentials, if any (not signed on the host: {gap})")
    for target, (_source, why) in needs.login_files.items():
        if "sandbox.claudeLogin" in why:
            held.append(f"{why}: readable inside at {target}")
    for var in needs.env_passthrough:
        if os.environ.get(var) and var not in routed and var not in needs.env_origins and _is_key(var):
            held.append(f"{var} (no gateway route for its provider)")
    if not sandboxed:
        return _row(False, "the agent CLI holds its model credentials (the sandbox is off (or level full): the CLI "
                           "runs as you)", "see docs/credential-gateway.md")
    if behind and sys.platform == "darwin":
        behind.append(MACOS_GATEWAY)
    if held:
        detail = "still reach the agent CLI: " + "; ".join(held)
        if behind:
            detail += ". Behind gtd's gateway: " + "; ".join(behind)
        fix = ("set sandbox.claudeLogin back to \"gateway\" (the default) in your user config"
               if any("sandbox.claudeLogin" in h for h in held) else
               "install gtd's cloud extra (pip install '.[cloud]' in gtd's source dir: botocore, google-auth) so "
               "gtd signs on the host" if any("[cloud]" in h for h in held) else "see docs/credential-gateway.md#what-is-not-covered")
        return _row(False, detail, fix)
    if not behind:
        return _row(True, "no model credential found in the environment or a login (the CLI may fail to log in)")
    return _row(True, "the agent CLI holds placeholders only; behind gtd's gateway: " + "; ".join(behind))


MACOS_GATEWAY = ("on macOS the gateway listens on the host's loopback at a port of its own, the one port besides "
                 "the proxy's that the seatbelt profile lets commands reach; any local process can reach it, so only "
                 "a request carrying this session's placeholder gets the real key put in")


def _is_key(var: str) -> bool:
    return var.endswith(("_API_KEY", "_AUTH_TOKEN", "_OAUTH_TOKEN"))


def _row(ok: bool, detail: str, fix: str = "") -> dict:
    return {"name": "model credentials", "ok": ok, "detail": detail, "fix": fix, "required": False}
