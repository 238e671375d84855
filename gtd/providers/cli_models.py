"""The model provider a person chose in opencode's or pi's own configuration, and the API hosts it needs.

Under gtd, opencode and pi run with a config dir gtd writes, so the person's own settings would be
lost: their default model, and the providers they defined (a local Ollama or LM Studio, a gateway).
This module reads those settings from the person's *user-level* files -- their own choice, like
their package registry settings (sandbox/policy/registries.py) -- and says which model API hosts the chosen
providers need, with where each came from, so the sandbox opens them at every level without a prompt:

- opencode: `$XDG_CONFIG_HOME/opencode/{config.json,opencode.json,opencode.jsonc}` and the file
  `OPENCODE_CONFIG` names (JSON with comments); `model` "provider/model", `provider.<id>.options.baseURL`;
- pi: `$PI_CODING_AGENT_DIR` or `~/.pi/agent`: `settings.json` (`defaultProvider`, `defaultModel`)
  and `models.json` (`providers.<id>.baseUrl`).

A project's own `opencode.json` or `.pi/settings.json` is never read for hosts: a cloned repository
must not open the network (gtd also tells opencode to ignore project config). A user-level file that
resolves into the workspace is ignored for the same reason. Files are read as regular files only,
capped; garbage reads as no settings, never as an error that stops gtd.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from gtd.record import field, record

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Any, Iterable, Mapping

MAX_CONFIG_BYTES = 256 * 1024

# Built-in providers of both CLIs (opencode's ids come from models.dev, pi's from pi-ai; they agree
# for these) and the API hosts they call. Bedrock and Vertex depend on the region.
KNOWN_HOSTS: dict[str, tuple[str, ...]] = {
    "anthropic": ("api.anthropic.com:443",),
    "openai": ("api.openai.com:443",),
    "openrouter": ("openrouter.ai:443",),
    "google": ("generativelanguage.googleapis.com:443",),
    "groq": ("api.groq.com:443",),
    "mistral": ("api.mistral.ai:443",),
    "deepseek": ("api.deepseek.com:443",),
    "xai": ("api.x.ai:443",),
    "cerebras": ("api.cerebras.ai:443",),
    "fireworks": ("api.fireworks.ai:443",),
    "huggingface": ("router.huggingface.co:443",),
    "together": ("api.together.xyz:443",),
    "ollama": ("localhost:11434",),  # the defaults of a local server, when no baseURL says otherwise
    "lmstudio": ("localhost:1234",),
}
REGIONAL = ("amazon-bedrock", "google-vertex", "google-vertex-anthropic")


@record(frozen=True)
class ModelHost:
    rule: str  # "host:port"
    origin: str  # where it was named, for `gtd sandbox explain`


@record
class CliModelConfig:
    """What one CLI's user-level files say about models: its default model and the providers defined."""

    cli: str
    model: str | None = None  # "provider/model"
    providers: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> the CLI's own entry
    origins: dict[str, str] = field(default_factory=dict)  # "model" / provider id -> file it came from
    # Every file looked at, present or not: read-only inside the sandbox, so an agent cannot plant a
    # provider host for the next run (those under ~/.config/opencode and ~/.pi/agent already are).
    sources: list[Path] = field(default_factory=list)

    def base_url(self, provider: str) -> str | None:
        entry = self.providers.get(provider) or {}
        options = entry.get("options") if isinstance(entry.get("options"), dict) else {}
        value = options.get("baseURL") if self.cli == "opencode" else entry.get("baseUrl")
        return value if isinstance(value, str) and value.strip() else None


# -- reading ------------------------------------------------------------------------------------

def _read_json(path: Path, workspace: Path | None) -> dict[str, Any] | None:
    """A user config file as an object: the person's own symlinks are followed (dotfile managers),
    but a file in the workspace, or reached through a link there, is not theirs to trust; regular files
    only, capped; JSON with comments and trailing commas (JSONC) accepted. None for anything else."""
    from gtd.workspace_files import read_metadata_text

    text = read_metadata_text(path, limit=MAX_CONFIG_BYTES, untrusted=workspace)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except RecursionError:
        return None
    except ValueError:
        try:
            import json5

            data = json5.loads(text)
        except Exception:  # noqa: BLE001 - any garbage (bad syntax, nesting too deep) reads as no settings
            return None
    return data if isinstance(data, dict) else None


def _short(path: Path, home: Path) -> str:
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)


def opencode_config(home: Path, environ: Mapping[str, str] | None = None,
                    workspace: Path | None = None) -> CliModelConfig:
    environ = os.environ if environ is None else environ
    config_home = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    files = [config_home / "opencode" / name for name in ("config.json", "opencode.json", "opencode.jsonc")]
    if environ.get("OPENCODE_CONFIG"):
        files.append(Path(environ["OPENCODE_CONFIG"]).expanduser())
    found = CliModelConfig("opencode", sources=list(files))
    for path in files:  # later files win, as opencode merges them
        data = _read_json(path, workspace)
        if data is None:
            continue
        shown = _short(path, home)
        if _model_name(data.get("model")):
            found.model, found.origins["model"] = data["model"].strip(), shown
        providers = data.get("provider")
        for pid, entry in (providers.items() if isinstance(providers, dict) else ()):
            if isinstance(pid, str) and isinstance(entry, dict):
                found.providers[pid] = entry
                found.origins[pid] = shown
    return found


def pi_config(home: Path, environ: Mapping[str, str] | None = None, workspace: Path | None = None) -> CliModelConfig:
    environ = os.environ if environ is None else environ
    agent = Path(environ.get("PI_CODING_AGENT_DIR") or home / ".pi" / "agent").expanduser()
    found = CliModelConfig("pi", sources=[agent / "settings.json", agent / "models.json"])
    settings = _read_json(agent / "settings.json", workspace) or {}
    provider, model = settings.get("defaultProvider"), settings.get("defaultModel")
    if isinstance(provider, str) and _PROVIDER_ID.match(provider) and isinstance(model, str) and model.strip():
        found.model, found.origins["model"] = f"{provider}/{model.strip()}", _short(agent / "settings.json", home)
    models = _read_json(agent / "models.json", workspace) or {}
    providers = models.get("providers")
    for pid, entry in (providers.items() if isinstance(providers, dict) else ()):
        if isinstance(pid, str) and isinstance(entry, dict):
            found.providers[pid] = entry
            found.origins[pid] = _short(agent / "models.json", home)
    return found


_PROVIDER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def _model_name(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    provider, slash, model = value.strip().partition("/")
    return bool(slash and model and _PROVIDER_ID.match(provider))


def provider_of(model: str | None) -> str | None:
    """'openrouter/anthropic/claude-x' -> 'openrouter'."""
    return model.strip().partition("/")[0] if _model_name(model) else None


# -- hosts ----------------------------------------------------------------------------------------

def url_rule(url: str, environ: Mapping[str, str]) -> str | None:
    """A baseURL's "host:port" ({env:NAME} filled in from the environment, as opencode does), or None."""
    from gtd.providers.endpoints import host_port
    from gtd.sandbox.policy.domains import normalise_host, parse_rule, split_host_port, valid_host

    url = re.sub(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: environ.get(m.group(1), ""), url.strip())
    if not re.match(r"^https?://", url, re.IGNORECASE):
        return None
    try:
        rule = host_port(url)
        parse_rule(rule)
        if not valid_host(normalise_host(split_host_port(rule)[0])):
            return None
    except ValueError:
        return None
    return rule


def regional_hosts(provider: str, entry: dict[str, Any], environ: Mapping[str, str]) -> tuple[str, ...]:
    """Bedrock's runtime host in the region, or Vertex's hosts in the location (and Google's token host)."""
    options = entry.get("options") if isinstance(entry.get("options"), dict) else {}
    if provider == "amazon-bedrock":
        region = options.get("region") or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        return (f"bedrock-runtime.{region}.amazonaws.com:443",) if re.fullmatch(r"[a-z0-9-]{1,40}", str(region)) else ()
    location = options.get("location") or environ.get("GOOGLE_CLOUD_LOCATION") or environ.get("VERTEX_LOCATION") \
        or "us-central1"
    hosts = ["aiplatform.googleapis.com:443", "oauth2.googleapis.com:443"]
    if re.fullmatch(r"[a-z0-9-]{1,40}", str(location)) and location != "global":
        hosts.insert(0, f"{location}-aiplatform.googleapis.com:443")
    return tuple(hosts)


def model_hosts(config: CliModelConfig, chosen: Iterable[tuple[str, str]],
                environ: Mapping[str, str] | None = None) -> list[ModelHost]:
    """The API hosts of the chosen models' providers. `chosen`: (model "provider/model", where it
    was chosen). A provider defined with a base URL in the CLI's config uses that host; a known
    built-in provider its known hosts; anything else nothing (its host is asked about live)."""
    environ = os.environ if environ is None else environ
    found: list[ModelHost] = []
    for model, where in chosen:
        provider = provider_of(model)
        if provider is None:
            continue
        base = config.base_url(provider)
        if base is not None:
            rule = url_rule(base, environ)
            key = "options.baseURL" if config.cli == "opencode" else "baseUrl"
            hosts = [(rule, f"{config.cli} config {config.origins.get(provider)}: provider {provider} {key}")] \
                if rule else []
        elif provider in REGIONAL:
            hosts = [(rule, f"{where}: {config.cli}'s {provider} provider") for rule in
                     regional_hosts(provider, config.providers.get(provider) or {}, environ)]
        else:
            hosts = [(rule, f"{where}: {config.cli}'s {provider} provider") for rule in KNOWN_HOSTS.get(provider, ())]
        for rule, origin in hosts:
            if not any(h.rule == rule for h in found):
                found.append(ModelHost(rule, origin))
    return found


def chosen_models(cli: str, config: CliModelConfig, gtd_models: Mapping[str, str | None]) -> list[tuple[str, str]]:
    """(model, where chosen) for every phase: gtd's `models.<phase>` where set, else the CLI's own default."""
    out: list[tuple[str, str]] = []
    for phase in ("plan", "build", "learn"):
        model = gtd_models.get(phase)
        if model:
            pair = (model, f"gtd config models.{phase} = {model}")
        elif config.model:
            pair = (config.model, f"{cli} config {config.origins.get('model')}: model {config.model}")
        else:
            continue
        if pair[0] not in [m for m, _ in out]:
            out.append(pair)
    return out
