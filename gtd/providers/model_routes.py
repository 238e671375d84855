"""Which model APIs each agent CLI reaches through gtd's credential gateway, and with which credentials.

A route names one model API (its upstream base URL, fixed at the session's start) and the environment
variables whose value only that API may receive. Inside the sandbox the CLI is given the gateway's URL
for the route (`http://127.0.0.1:3129/<route>`) where it would have had the upstream's, and a placeholder
where it would have had the key (sandbox/network/credential_gateway.py).

Covered: Anthropic (ANTHROPIC_BASE_URL or the default; an API key, an auth token, or claude's subscription
login), OpenAI (OPENAI_BASE_URL or the default), the built-in providers of opencode and pi in BUILT_IN
(OpenRouter, Groq, xAI, Gemini, Mistral, DeepSeek, Cerebras, Hugging Face, Moonshot, MiniMax, Fireworks,
Together), each with the default endpoint of the CLI at hand (read from the pinned CLIs: pi-ai's model
catalogue `baseUrl`, opencode's bundled models.dev `api` or its AI SDK package's default), and providers
defined with a base URL in the person's own opencode or pi config. A built-in provider is routed when a
model of it is chosen, and whenever the CLI is given its key anyway (its CREDENTIAL_ENV), so that key never
reaches the CLI. Bedrock and Vertex are signed on the host by their own routes (cloud_routes.py for claude,
cli_cloud_routes.py for opencode's and pi's Bedrock); opencode's and pi's Vertex is not covered (its credentials
still reach the CLI, and `gtd doctor` says so).
"""

from __future__ import annotations

import os
import re

from gtd.providers.endpoints import ANTHROPIC_DEFAULT, OPENAI_DEFAULT, anthropic_base_url, openai_base_url, strip_v1
from gtd.sandbox.network.credential_gateway import GatewayRoute

ANTHROPIC_SECRETS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_OAUTH_TOKEN")
OPENAI_SECRETS = ("OPENAI_API_KEY",)


def _both(upstream: str, *keys: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {"opencode": (upstream, keys), "pi": (upstream, keys)}


# Built-in providers, by the id each CLI gives them: {cli: (its default upstream, the key variables it reads)}.
# The upstream differs where one CLI's SDK adds a path the other's base URL holds (Mistral: @ai-sdk/mistral
# posts to <base>/chat/completions, pi's Mistral SDK to <base>/v1/chat/completions). Each sends its key in a
# header the gateway swaps (credential_forward.AUTH_HEADERS): `Authorization: Bearer`, or `x-api-key` where the
# API is Anthropic's (MiniMax, pi's Fireworks). Tested end to end in tests/providers/test_builtin_routes_e2e.py.
BUILT_IN: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "openrouter": _both("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "groq": _both("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "xai": _both("https://api.x.ai/v1", "XAI_API_KEY"),
    "google": _both("https://generativelanguage.googleapis.com/v1beta", "GEMINI_API_KEY",
                    "GOOGLE_GENERATIVE_AI_API_KEY"),
    "mistral": {"opencode": ("https://api.mistral.ai/v1", ("MISTRAL_API_KEY",)),
                "pi": ("https://api.mistral.ai", ("MISTRAL_API_KEY",))},
    "deepseek": _both("https://api.deepseek.com", "DEEPSEEK_API_KEY"),
    "cerebras": _both("https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"),
    "huggingface": _both("https://router.huggingface.co/v1", "HF_TOKEN"),
    "moonshotai": _both("https://api.moonshot.ai/v1", "MOONSHOT_API_KEY"),
    "minimax": {"opencode": ("https://api.minimax.io/anthropic/v1", ("MINIMAX_API_KEY",)),
                "pi": ("https://api.minimax.io/anthropic", ("MINIMAX_API_KEY",))},
    "fireworks-ai": {"opencode": ("https://api.fireworks.ai/inference/v1", ("FIREWORKS_API_KEY",))},
    "fireworks": {"pi": ("https://api.fireworks.ai/inference", ("FIREWORKS_API_KEY",))},
    "togetherai": {"opencode": ("https://api.together.xyz/v1", ("TOGETHER_API_KEY",))},
}
# Credential variables the CLIs are given that no route carries: they still reach the CLI (shown by `gtd doctor`).
UNROUTED: tuple[str, ...] = ()
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


def routes_for(cli: str, own, chosen, passed: tuple[str, ...] = ()) -> list[GatewayRoute]:
    """The routes opencode or pi needs: Anthropic and OpenAI always, plus each chosen model's provider that is
    built in (BUILT_IN) or defined with a base URL in the person's config `own` (a cli_models.CliModelConfig),
    plus each built-in provider whose key is set and among `passed` (the keys the CLI is given anyway)."""
    from gtd.providers.cli_models import REGIONAL, provider_of

    routes = [anthropic_route(), openai_route()]
    wanted = [provider_of(model) for model, _where in chosen]
    wanted += [name for name, by_cli in BUILT_IN.items() if cli in by_cli
               and any(var in passed and os.environ.get(var) for var in by_cli[cli][1])]
    for provider in wanted:
        if provider is None or provider in ("anthropic", "openai") or any(r.name == provider for r in routes):
            continue
        if provider in REGIONAL:  # signed with a cloud identity, never a plain key: cli_cloud_routes.py
            continue
        base = own.base_url(provider) if own is not None else None
        if base is not None:
            route = user_route(cli, provider, base, own)
            if route is not None:
                routes.append(route)
        elif cli in BUILT_IN.get(provider, {}):
            upstream, secrets = BUILT_IN[provider][cli]
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
    origin = f"{cli} config {own.origins.get(provider)}: provider {provider}"
    if not key and cli in BUILT_IN.get(provider, {}):  # a built-in provider moved elsewhere: the CLI's own key
        return GatewayRoute(provider, base.rstrip("/"), BUILT_IN[provider][cli][1], origin=origin)
    return GatewayRoute(provider, base.rstrip("/"), (var,) if key else (), values=((var, key),) if key else (),
                        origin=origin)


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
