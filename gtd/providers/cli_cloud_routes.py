"""opencode and pi on Amazon Bedrock behind the credential gateway: the AWS identity stays on the host.

Both CLIs take a Bedrock API key instead of signing, and an endpoint of the person's choosing (read from the
pinned CLIs, checked against a logging server):

- opencode's `amazon-bedrock` loader reads `AWS_BEARER_TOKEN_BEDROCK` (then it asks no AWS credential chain)
  and the provider's `options.endpoint` (or `options.baseURL`); @ai-sdk/amazon-bedrock then sends
  `Authorization: Bearer <token>` to `<endpoint>/model/<id>/converse-stream`.
- pi's Bedrock provider (pi-ai on @aws-sdk/client-bedrock-runtime) reads `AWS_BEARER_TOKEN_BEDROCK` (the SDK's
  `httpBearerAuth`) and uses a models.json `baseUrl` that is not AWS's own host as the SDK's endpoint. Its
  SDK speaks HTTP/2 to an endpoint unless `AWS_BEDROCK_FORCE_HTTP1=1` (or a proxy variable) is set: the
  gateway speaks HTTP/1.1, so gtd sets it.

So inside, the CLI gets the route's placeholder as `AWS_BEARER_TOKEN_BEDROCK`, the region, and the gateway as
its Bedrock endpoint in the config gtd writes; on the host the gateway puts in the person's Bedrock API key or
signs with SigV4 from the host's AWS chain (cloud_routes.bedrock_route: the same signer as claude's). The
upstream is the endpoint the person's own CLI config names for `amazon-bedrock`, else the region's
`bedrock-runtime` host. When no route can be made (no `cloud` extra and no Bedrock API key, no AWS credential,
an AWS file the agent could have written), the credentials reach the sandbox as before (cloud_credentials.py)
and `gtd doctor` says why. Vertex is not routed: see add_chosen_clouds.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from gtd.providers.cloud_credentials import BEDROCK, add_chosen_clouds

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Iterable, Mapping

PROVIDER = "amazon-bedrock"
ROUTE = "bedrock"
# Never carried from the person's own Bedrock entry into the config gtd writes: a credential, or where to go.
DROPPED_OPTIONS = ("apiKey", "bearerToken", "accessKeyId", "secretAccessKey", "sessionToken", "profile",
                   "credentialProvider", "endpoint", "baseURL", "region")
DROPPED_PI = ("apiKey", "baseUrl")


def add_cli_clouds(needs, cli: str, own, chosen: Iterable[tuple[str, str]], environ: Mapping[str, str] | None = None,
                   workspace: Path | None = None):
    """`needs` (a SandboxNeeds) for the chosen opencode/pi models (model, where chosen) on a cloud: Bedrock
    behind the gateway when a route can be made, else (and Vertex always) the credentials inside."""
    from gtd.providers.cli_models import provider_of

    environ = os.environ if environ is None else environ
    chosen = list(chosen)
    bedrock = [(m, w) for m, w in chosen if provider_of(m) == PROVIDER]
    add_chosen_clouds(needs, [(m, w) for m, w in chosen if provider_of(m) != PROVIDER], environ, workspace)
    if not bedrock:
        return needs
    route, gap = bedrock_route(cli, own, bedrock[0][1], environ, workspace)
    if route is not None:
        needs.model_routes.append(route)
        return needs
    add_chosen_clouds(needs, bedrock, environ, workspace)
    needs.gateway_gaps[BEDROCK] = gap
    return needs


def bedrock_route(cli: str, own, why: str, environ: Mapping[str, str], workspace: Path | None = None):
    """(the `bedrock` route for opencode or pi, "") or (None, why there is none)."""
    from gtd.providers.cloud_routes import bedrock_route as route_for
    from gtd.providers.model_routes import real_user_key

    entry = (own.providers.get(PROVIDER) if own is not None else None) or {}
    options = entry.get("options") if isinstance(entry.get("options"), dict) else {}
    if cli == "opencode":
        base, region = options.get("endpoint") or options.get("baseURL"), options.get("region")
        key = real_user_key(cli, entry)  # opencode's options.apiKey: a Bedrock API key, before the variable
        if key:
            environ = {**environ, "AWS_BEARER_TOKEN_BEDROCK": key}
    else:
        base, region = entry.get("baseUrl"), None
    base = base.strip() if isinstance(base, str) else ""
    if base and not re.match(r"^https?://", base, re.IGNORECASE):
        return None, f"the {PROVIDER} endpoint in your {cli} config is not an http(s) URL: {base[:80]!r}"

    def told(signer) -> tuple[tuple[str, str], ...]:
        env = (("AWS_BEARER_TOKEN_BEDROCK", "{placeholder}"), ("AWS_REGION", signer.region))
        return env + ((("AWS_BEDROCK_FORCE_HTTP1", "1"),) if cli == "pi" else ())

    return route_for(f"{cli}: {why}", environ, workspace, base=base,
                     region=region if isinstance(region, str) else None, env=told)


def through_gateway(cli: str, entry: dict | None, url: str) -> dict:
    """The CLI's Bedrock provider entry in the config gtd writes: the person's own (models, headers), without
    any credential or endpoint of theirs, pointed at the gateway's `url`."""
    entry = dict(entry or {})
    if cli == "opencode":
        options = entry.get("options") if isinstance(entry.get("options"), dict) else {}
        options = {k: v for k, v in options.items() if k not in DROPPED_OPTIONS}
        return {**entry, "options": {**options, "endpoint": url, "baseURL": url}}
    return {**{k: v for k, v in entry.items() if k not in DROPPED_PI}, "baseUrl": url}
