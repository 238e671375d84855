"""Provider lookup: by name, `auto` (the first installed real CLI), and the report for `gtd doctor`."""

from __future__ import annotations

import importlib

from gtd.errors import GtdError
from gtd.exitcodes import ExitCode
from gtd.providers.base import Provider

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from gtd.config.schema import GtdConfig

# name -> (module, class); `auto` tries the real CLIs in this order.
PROVIDERS: dict[str, tuple[str, str]] = {
    "claude": ("gtd.providers.claude", "ClaudeProvider"),
    "opencode": ("gtd.providers.opencode", "OpencodeProvider"),
    "pi": ("gtd.providers.pi", "PiProvider"),
    "scripted": ("gtd.providers.scripted", "ScriptedProvider"),
}
AUTO_ORDER = ("claude", "opencode", "pi")
# Each real CLI's executable (its class's `executable`): `auto` looks it up on PATH before importing the
# provider's module, so a machine with one CLI, or none, does not import the other two (every
# `gtd sandbox run` asks for the provider's needs: issue 13).
EXECUTABLES = {"claude": "claude", "opencode": "opencode", "pi": "pi"}
INSTALL_HINTS = {  # the command to copy, then where gtd's own checkout has the pinned versions
    name: f"`npm install -g {package}` (or scripts/install-agents in a gtd source checkout)"
    for name, package in (("claude", "@anthropic-ai/claude-code"), ("opencode", "opencode-ai"),
                          ("pi", "@mariozechner/pi-coding-agent"))
}


def _load(name: str) -> type[Provider]:
    module, cls = PROVIDERS[name]
    return getattr(importlib.import_module(module), cls)


def _make(name: str, config: GtdConfig) -> Provider:
    if name == "scripted":
        return _load(name)(config.script)
    provider = _load(name)()
    provider.models = phase_models(config)
    sandbox = getattr(config, "sandbox", None)
    if name == "claude" and getattr(sandbox, "claude_login", "gateway") == "inside":
        provider.login_inside = True  # sandbox.claudeLogin: the login bound in, not kept on the host
    return provider


def phase_models(config) -> dict[str, str | None]:
    """`models.<phase>` of a GtdConfig or a ConfigView (where an unset phase may be absent)."""
    models = getattr(config, "models", None)
    return {phase: getattr(models, phase, None) for phase in ("plan", "build", "learn")} if models is not None else {}


def get_provider(name: str, config: GtdConfig) -> Provider:
    """The provider to run. A named real CLI that is not installed is an error, not a silent switch."""
    if name == "auto":
        from gtd.which import which

        for candidate in AUTO_ORDER:
            if which(EXECUTABLES[candidate]) is None:
                continue  # what provider.is_installed() would say, without importing the provider
            try:
                provider = _make(candidate, config)
            except ImportError:
                continue
            if provider.is_installed():
                return provider
        raise GtdError(
            "no agent CLI found (provider: auto looks for claude, opencode, pi on PATH). Install one, e.g. "
            f"{INSTALL_HINTS['claude']}, or use `--provider scripted` for the offline demo. "
            "`gtd doctor` shows what is installed.",
            exit_code=ExitCode.USAGE,
        )
    if name not in PROVIDERS:
        raise GtdError(f"unknown provider '{name}' (expected auto, {', '.join(PROVIDERS)})", exit_code=ExitCode.USAGE)
    provider = _make(name, config)
    if not provider.is_installed():
        raise GtdError(f"provider '{name}': `{provider.executable}` is not on PATH. Install it: {INSTALL_HINTS[name]}",
                       exit_code=ExitCode.USAGE)
    return provider


def provider_report() -> list[dict]:
    """Each real CLI's presence and version (for `gtd doctor`)."""
    from gtd.config.schema import GtdConfig

    report = []
    for name in AUTO_ORDER:
        try:
            provider = _make(name, GtdConfig())
        except ImportError as exc:
            report.append({"name": name, "installed": False, "path": None, "version": None, "fix": str(exc)})
            continue
        path = provider.executable_path()
        ran = provider.host_executable() if path else None  # whose version is shown: none from the repository
        if path is None:
            fix = f"install it: {INSTALL_HINTS[name]}"
        elif ran is None:
            fix = (f"{path} is on a PATH entry in the repository (or a relative one), which the agent can write: "
                   f"gtd never runs it on the host; install it elsewhere: {INSTALL_HINTS[name]}")
        else:
            fix = ""
        report.append({"name": name, "installed": path is not None, "path": ran or path,
                       "version": provider.version() if ran else None, "fix": fix})
    return report
