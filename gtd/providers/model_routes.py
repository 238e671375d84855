"""Which model APIs each agent CLI reaches through gtd's credential gateway, and with which credentials.

A route names one model API (its upstream base URL, fixed at the session's start) and the environment
variables whose value only that API may receive. Inside the sandbox the CLI is given the gateway's URL
for the route (`http://127.0.0.1:3129/<route>`) where it would have had the upstream's, and a placeholder
where it would have had the key (sandbox/network/credential_gateway.py).

Covered: Anthropic (ANTHROPIC_BASE_URL or the default; an API key, an auth token, or claude's subscription
login), OpenAI (OPENAI_BASE_URL or the default), the built-in providers whose default endpoint both opencode
and pi share (OpenRouter, Groq, xAI, Google's Gemini API), and providers defined with a base URL in the
person's own opencode or pi config. Not covered (their keys still reach the CLI, and `gtd doctor` says so):
opencode's and pi's Bedrock and Vertex (their SDKs sign in the CLI; claude's are signed on the host:
cloud_routes.py), and other
built-in providers whose default endpoints gtd does not know for both CLIs (Mistral, DeepSeek, ...).
"""

from __future__ import annotations

import os
import re

from gtd.providers.endpoints import ANTHROPIC_DEFAULT, OPENAI_DEFAULT, anthropic_base_url, openai_base_url, strip_v1
from gtd.sandbox.network.credential_gateway import GatewayRoute

ANTHROPIC_SECRETS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_OAUTH_TOKEN")
OPENAI_SECRETS = ("OPENAI_API_KEY",)
# Built-in providers of opencode and pi with the same default endpoint in both: (upstream, key variables).
BUILT_IN: dict[str, tuple[str, tuple[str, ...]]] = {
    "openrouter": ("https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",)),
    "groq": ("https://api.groq.com/openai/v1", ("GROQ_API_KEY",)),
    "xai": ("https://api.x.ai/v1", ("XAI_API_KEY",)),
    "google": ("https://generativelanguage.googleapis.com/v1beta", ("GEMINI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY")),
}
# Credential variables the CLIs read that no route carries: they still reach the CLI (shown by `gtd doctor`).
UNROUTED = ("MISTRAL_API_KEY", "DEEPSEEK_API_KEY")
USER_KEY_PREFIX = "GTD_MODEL_KEY_"  # the variable a person's own provider's key is given under, inside


def anthropic_route(login=None) -> GatewayRoute:
    """Claude's API: ANTHROPIC_BASE_URL (without its /v1: each CLI adds what it needs) or api.anthropic.com."""
    base = anthropic_base_url()
    return GatewayRoute("anthropic", strip_v1(base or ANTHROPIC_DEFAULT), ANTHROPIC_SECRETS, login=login,
                        origin="ANTHROPIC_BASE_URL" if base else "the default endpoint")


def openai_route() -> GatewayRoute:
    base = openai_base_url()
    return GatewayRoute("openai", (base or OPENAI_DEFAULT).rstrip("/"), OPENAI_SECRETS,
                        origin="OPENAI_BASE_URL" if base else "the default endpoint")


def user_key_var(provider: str) -> str:
    return USER_KEY_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", provider).upper()


def routes_for(cli: str, own, chosen) -> list[GatewayRoute]:
    """The routes opencode or pi needs: Anthropic and OpenAI always, plus each chosen model's provider that is
    built in (BUILT_IN) or defined with a base URL in the person's config `own` (a cli_models.CliModelConfig)."""
    from gtd.providers.cli_models import provider_of

    routes = [anthropic_route(), openai_route()]
    for model, _where in chosen:
        provider = provider_of(model)
        if provider is None or provider in ("anthropic", "openai") or any(r.name == provider for r in routes):
            continue
        base = own.base_url(provider) if own is not None else None
        if base is not None:
            route = user_route(cli, provider, base, own)
            if route is not None:
                routes.append(route)
        elif provider in BUILT_IN:
            upstream, secrets = BUILT_IN[provider]
            routes.append(GatewayRoute(provider, upstream, secrets, origin=f"{cli}'s {provider} provider"))
    return routes


def user_route(cli: str, provider: str, base: str, own) -> GatewayRoute | None:
    """A provider the person defined with a base URL: its key is the one their config names (`{env:X}` or an
    environment variable's name), or a literal key there; either way the CLI gets it under user_key_var."""
    if not re.match(r"^https?://", base.strip(), re.IGNORECASE):
        return None
    base = re.sub(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: os.environ.get(m.group(1), ""), base.strip())
    key = real_user_key(cli, own.providers.get(provider) or {})
    var = user_key_var(provider)
    return GatewayRoute(provider, base.rstrip("/"), (var,) if key else (), values=((var, key),) if key else (),
                        origin=f"{cli} config {own.origins.get(provider)}: provider {provider}")


def real_user_key(cli: str, entry: dict) -> str | None:
    """The key a person's provider entry names: opencode `options.apiKey` ("{env:X}" or literal), pi `apiKey`
    (an environment variable's name, or literal)."""
    options = entry.get("options") if isinstance(entry.get("options"), dict) else {}
    raw = options.get("apiKey") if cli == "opencode" else entry.get("apiKey")
    if not isinstance(raw, str) or not raw.strip():
        return None
    raw = raw.strip()
    named = re.fullmatch(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}", raw)
    if named:
        return os.environ.get(named.group(1)) or None
    if cli == "pi" and re.fullmatch(r"[A-Z_][A-Z0-9_]*", raw):
        return os.environ.get(raw) or None
    return raw
