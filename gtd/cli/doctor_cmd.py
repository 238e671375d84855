"""`gtd doctor`: can gtd run here, and if not, what to do about it."""


import json
import sys

import typer

from gtd.cli import options as opt
from gtd.cli.context import stdout
from gtd.cli.options import RunOptions
from gtd.exitcodes import ExitCode
from gtd.terminal_text import markup


def _check(name: str, ok: bool, detail: str, fix: str = "", required: bool = True) -> dict:
    return {"name": name, "ok": ok, "detail": detail, "fix": fix, "required": required}


def collect(directory=None) -> list[dict]:
    from gtd.errors import GtdError
    from gtd.host_programs import host_program
    from gtd.providers.registry import provider_report
    from gtd.sandbox.diagnose.doctor import sandbox_checks

    git = host_program("git")  # the git gtd commits with: never one from the repository's PATH dirs
    checks = [
        _check("python", sys.version_info >= (3, 11), sys.version.split()[0], "install Python 3.11+"),
        _check("git", git is not None, git or "not found (PATH entries in the repository are not searched)", "install git"),
    ]
    try:
        from gtd.cli.context import load

        loaded = load(RunOptions(directory=directory))
        checks.append(_check("config", True, ", ".join(str(f) for f in loaded.files) or "defaults only"))
        sandbox_enabled = loaded.config.sandbox.enabled
        wanted = str(loaded.config.provider)
        config, workspace = loaded.config, loaded.repo_root
    except GtdError as exc:
        checks.append(_check("config", False, str(exc), "fix the file named above"))
        sandbox_enabled, wanted, config, workspace = True, "auto", None, None
    provider = _probed_provider(wanted, config)
    for check in sandbox_checks(_needs_of(provider, workspace) if provider else None,
                                cli=provider.name if provider else None, config=config, workspace=workspace):
        check.setdefault("required", sandbox_enabled)
        check["sandbox"] = True
        checks.append(check)
    if provider is not None:
        checks.append(_credentials(provider, workspace, config))
    providers = provider_report()
    for provider in providers:
        detail = f"{provider.get('version') or ''} {provider.get('path') or ''}".strip() or "not installed"
        # The configured CLI is required; under `auto` each is optional, but one of them must be there.
        checks.append(_check(f"provider {provider['name']}", bool(provider["installed"]), detail,
                             provider.get("fix", ""), required=provider["name"] == wanted))
    if wanted == "auto" and not any(p["installed"] for p in providers):
        checks.append(_check("agent CLI", False, "none of " + ", ".join(p["name"] for p in providers)
                             + " is installed (provider: auto)", "install one of them (fixes above)"))
    return checks


def _probed_provider(wanted: str, config):
    """The agent CLI whose real mounts the sandbox probe uses (the configured one, or the one `auto`
    picks); None when there is none to run."""
    if config is None:
        return None
    from gtd.errors import GtdError
    from gtd.providers.registry import get_provider

    try:
        provider = get_provider(wanted, config)
    except GtdError:
        return None
    return provider if provider.name != "scripted" else None


def _credentials(provider, workspace, config) -> dict:
    """Which model credentials stay on the host behind gtd's gateway, and which still reach the CLI."""
    from gtd.providers.credential_report import credential_row

    try:
        needs = provider.sandbox_needs(workspace)
    except Exception as exc:  # noqa: BLE001 - doctor reports, it never stops on one check
        return _check("model credentials", False, f"could not be worked out: {exc}", required=False)
    sandboxed = bool(config.sandbox.enabled) if config is not None else True
    return credential_row(needs, sandboxed=sandboxed)


def _needs_of(provider, workspace):
    """What the probe mounts for `provider`: its command is built (not run) as for a real phase, in a scratch
    dir, so the files its preparation writes and the login it checks are part of the start."""
    def needs(scratch):
        from gtd.config.levels import Phase
        from gtd.providers.base import AgentRequest

        found = provider.sandbox_needs(workspace)
        gateway = {}
        if sys.platform.startswith("linux") or sys.platform == "darwin":  # as a run's: a login is refreshed on the host
            from gtd.sandbox.network.credential_gateway import gateway_url

            gateway = {route.name: gateway_url(route.name) for route in found.model_routes}
        provider.command(AgentRequest(phase=Phase.BUILD, prompt="", cwd=scratch, gateway=gateway))
        return provider.sandbox_needs(workspace)

    return needs


def doctor(json_out: opt.JsonOut = False, directory: opt.Directory = None) -> None:
    """Check the sandbox, the agent CLIs and the config; explain how to fix what is missing.

    Examples:

    
      gtd doctor
      gtd doctor --json
    """
    checks = collect(directory)
    failed = [c for c in checks if c["required"] and not c["ok"]]
    if json_out:
        stdout.print_json(json.dumps({"ok": not failed, "checks": checks}))
    else:
        from rich.table import Table

        table = Table(box=None, show_header=False)
        table.add_column(no_wrap=True)
        table.add_column(no_wrap=True)
        table.add_column(overflow="fold")
        for check in checks:
            mark = "[green]ok[/green]" if check["ok"] else ("[red]FAIL[/red]" if check["required"] else "[yellow]--[/yellow]")
            fix = f"\n[dim]fix: {markup(check['fix'])}[/dim]" if check["fix"] and not check["ok"] else ""
            table.add_row(mark, markup(check["name"]), markup(str(check["detail"])) + fix)
        stdout.print(table)
    if failed:
        raise typer.Exit(ExitCode.SANDBOX_UNAVAILABLE if any(c.get("sandbox") for c in failed) else ExitCode.FAILURE)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
