"""`gtd sandbox explain` and `gtd sandbox run`: show the policy a phase gets, run any command under it."""


import json
import os
import sys
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from gtd.cli import options as opt
from gtd.config.levels import Level, Phase
from gtd.terminal_text import write

PhaseOpt = Annotated[Optional[Phase], typer.Option("--phase", help="Use this phase's configured level and its own file.")]
LevelOpt = Annotated[Optional[Level], typer.Option("--level", help="Use this level (overrides the phase's). "
                                                   "Default: the --phase's configured level, else readonly.")]


def _policy(phase: Phase | None, level: Level | None, directory: Path | None, *, with_provider: bool = True):
    from gtd.cli.sandbox_run import policy_for

    return policy_for(phase, level, directory, with_provider=with_provider)


def explain(
    phase: PhaseOpt = None,
    level: LevelOpt = None,
    json_out: opt.JsonOut = False,
    directory: opt.Directory = None,
    show_all: Annotated[bool, typer.Option("--all", help="Also list protected and hidden paths that do not exist now.")] = False,
) -> None:
    """Print the sandbox policy for a phase or level: writable, protected and hidden paths, reachable hosts.

    Examples:

    
      gtd sandbox explain --phase build
      gtd sandbox explain --level network --json
    """
    policy = _policy(phase, level, directory)
    from gtd.sandbox.diagnose.explain import explained

    data = explained(policy)
    if json_out:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    write(f"level: {data['level']}" + (f" (phase {data['phase']})" if data["phase"] else "") + "\n")
    write(f"workspace: {data['workspace']}\n")
    if not data["sandboxed"]:
        write(f"NOT SANDBOXED: {data['reason']} (no filesystem or network restriction)\n")
        return
    write(f"readable: {data['readable']}\n")
    _explain_home(data, write)
    for key, title in (
        ("writable", "writable"),
        ("protected", "read-only even inside writable paths"),
        ("denyRead", "hidden (cannot be read)"),
        ("modelHosts", "model API (reachable at every level)"),
        ("allowDomains", "allowed domains"),
        ("denyDomains", "denied domains (always refused)"),
        ("envPassthrough", "environment passed through"),
    ):
        items = data[key]
        absent = [i for i in items if not os.path.lexists(i)] if key in ("protected", "denyRead") and not show_all else []
        write(f"{title}:{'' if items else ' (none)'}\n")
        origins = {"modelHosts": data.get("modelHostOrigins"), "envPassthrough": data.get("envOrigins")}.get(key) or {}
        for item in items:
            if item not in absent:
                write(f"  {item}" + (f" (from {origins[item]})" if item in origins else "") + "\n")
        if absent:  # ~100 hook, editor and shell config names: the ones not there now would bury the rest
            write(f"  + {len(absent)} more that do not exist now (the same rule if one is created; --all lists them)\n")
    _explain_credential_files(data, write)
    _explain_gateway(data, write)
    _explain_registries(policy, write)
    _explain_caches(policy, write)
    if data["level"] in ("readonly", "readwrite") and not data["allowDomains"]:
        write("network: only the model API, through gtd's filtering proxy\n")
    ports = data.get("hostLoopbackPorts") or []
    write("loopback: 127.0.0.1 and ::1 are the sandbox's own (local servers need no rule)\n")
    write("host loopback ports (127.0.0.1:PORT inside reaches the host's):"
          + (" " + ", ".join(map(str, ports)) if ports else " (none; add sandbox.levels.<level>.hostLoopbackPorts)") + "\n")
    write("direct connections caught on ports: " + ", ".join(map(str, data.get("interceptPorts") or [])) + "\n")
    limits = data["limits"]
    write("limits (each sandboxed command; sandbox.limits):\n")
    for key in ("processes", "memory"):
        how = limits["enforcedBy"][key]
        write(f"  {key}: {limits[key]}" + (f" ({how})" if how else "") + "\n")
    write(f"landlock: {data['landlock']}\n")
    backend = data.get("backend")
    if backend:
        write(f"backend: {backend['backend']} ({backend['reason']})\n")
        for item in backend["weaker"]:
            write(f"  weaker: {item}\n")


def _explain_home(data, write) -> None:
    """What of HOME is shown (read-only, each with why), and what is hidden outside it (docs/home-allow-list.md)."""
    if data["homeHidden"]:
        write("HOME is hidden; shown read-only (add more with sandbox.readPaths):\n")
        for item in data["homeAllowList"]:
            write(f"  {item['path']} ({item['reason']})\n")
        for item in data["generatedFiles"]:
            write(f"  {item['path']} ({item['reason']})\n")
        write("  + the workspace, writable paths, package caches and the model provider's login, where they are in HOME\n")
    else:
        write("HOME is not hidden: the workspace is HOME (or holds it), or HOME is writable\n")
    write("hidden outside HOME:" + ("" if data["hiddenOutsideHome"] else " (none here)") + "\n")
    for item in data["hiddenOutsideHome"]:
        write(f"  {item['path']} ({item['reason']})\n")


def _explain_credential_files(data, write) -> None:
    """A chosen cloud provider's credential files: bound read-only, or refused and why."""
    if data["credentialFiles"]:
        write("credential files (read-only, never writable):\n")
    for item in data["credentialFiles"]:
        via = f" -> {item['source']}" if item["source"] != item["path"] else ""
        write(f"  {item['path']}{via} (from {item['origin']})\n")
    for item in data["refusedCredentialFiles"]:
        write(f"credential file NOT passed in: {item['path']} ({item['origin']}): {item['reason']}\n")


def _explain_gateway(data, write) -> None:
    """The model APIs behind the credential gateway: the CLI holds placeholders (docs/credential-gateway.md)."""
    routes = data.get("modelGateway") or []
    if routes:
        write("model credentials (the CLI holds placeholders; gtd's gateway puts the real key in on the host):\n")
    port = "<a port of its own>" if sys.platform == "darwin" else "3129"  # macOS: on the host's loopback
    for route in routes:
        names = ", ".join(route["credentials"]) or "no credential set"
        write(f"  http://127.0.0.1:{port}/{route['route']} -> {route['upstream']} ({names}; {route['origin']})\n")


def _explain_registries(policy, write) -> None:
    """The registries the person's own settings name (reachable at network without a prompt), and whose
    credentials reach the sandbox."""
    from gtd.sandbox.policy.registries import user_registries

    registries = policy.registries or tuple(user_registries(policy.home, workspace=policy.workspace))
    if registries:
        when = "reachable without a prompt" if policy.registries else "reachable without a prompt at level network"
        write(f"registries from your own settings ({when}):\n")
        for registry in registries:
            write(f"  {registry.rule} ({registry.tool}, from {registry.origin})\n")
    creds = ", ".join(policy.credential_hosts) or "none (sandbox.registryCredentials)"
    write(f"registry credentials passed in: {creds}\n")


def _explain_caches(policy, write) -> None:
    """Which package caches the command can write, and how (overlay or per-project fallback)."""
    if not policy.caches:
        return
    from gtd.sandbox.linux.cache_layer import fallback_dir, layer_dir, overlay_check
    from gtd.sandbox.policy.caches import CACHE_HOME

    ok, detail = overlay_check()
    if ok:
        how = f"reads hit your cache; writes go to a per-project copy-on-write layer in {layer_dir(policy.workspace)}"
    else:
        how = (f"overlays unavailable ({detail}): tools (and XDG_CACHE_HOME) are pointed at per-project caches in "
               f"{fallback_dir(policy.workspace)}; the cache home, cargo, gradle and maven caches stay read-only")
    write(f"package caches ({how}):\n")
    for cache in policy.caches:
        where = f"${cache.origin}" if cache.origin.isidentifier() else cache.origin  # a variable, or a file's setting
        origin = f" (from {where})" if cache.origin != "default" else ""
        name = cache.tool
        if cache.tool == CACHE_HOME:
            name = "cache home (every tool's cache in it: node-gyp, puppeteer, playwright, pre-commit, …)"
        write(f"  {name}: {cache.path}{origin}\n")
    if ok and any(c.tool == CACHE_HOME for c in policy.caches):
        write("  (protected and hidden paths in the cache home stay read-only / hidden)\n")


PendingJson = Annotated[Optional[Path], typer.Option(
    "--pending-json", metavar="FILE",
    help="Write what is left for `gtd approve` to FILE as JSON (status ok or escalation_pending, the requests, "
         "commandExitCode) and exit with the command's own status, even when requests are pending.",
)]


def run(
    command: Annotated[List[str], typer.Argument(help="The command to run (after `--`).")],
    phase: PhaseOpt = None,
    level: LevelOpt = None,
    directory: opt.Directory = None,
    non_interactive: opt.NonInteractive = False,
    pending_json: PendingJson = None,
) -> None:
    """Run COMMAND inside the sandbox (`gtd sandbox run [--level L] -- CMD ...`); its exit status is passed through.

    A connection no rule allows is held while you decide (allow once / save / deny); with no
    terminal it is refused and saved for `gtd approve`: gtd then exits 4 and prints the pending
    requests as JSON on stderr, or, with --pending-json FILE, writes them to FILE and exits with the
    command's own status. The command's stdout is never touched. Every refusal (a connection, a
    write the sandbox refused) is shown on stderr as it happens and recorded in `gtd audit`.
    The command starts from a minimal environment: name the variables it needs (NODE_ENV,
    DATABASE_URL) in sandbox.passEnv. Ctrl-C reaches it as SIGINT.

    Examples:

    \b
      gtd sandbox run -- npm test                      # readonly: the default level
      gtd sandbox run --phase build -- make            # the build phase's level
      gtd sandbox run --level network -- pip install -r requirements.txt
    """
    from gtd.cli.sandbox_run import run_in_sandbox

    raise typer.Exit(run_in_sandbox(command, phase, level, directory, non_interactive, pending_json))


def why(
    target: Annotated[str, typer.Argument(help="A path (write) or host[:port] (connection).")],
    as_path: Annotated[bool, typer.Option("--path", help="TARGET is a path even if it looks like a host name.")] = False,
    phase: PhaseOpt = None,
    level: LevelOpt = None,
    json_out: opt.JsonOut = False,
    directory: opt.Directory = None,
) -> None:
    """Explain whether the sandbox allows writing a path or reaching a host, which rule decides, and how to change it.

    Examples:

    
      gtd sandbox why .git/hooks/pre-commit --phase build
      gtd sandbox why registry.npmjs.org:443 --phase build
    """
    from gtd.config.levels import Level
    from gtd.sandbox.diagnose.why import why as explain_target

    policy = _policy(phase, level, directory)
    verdict = explain_target(policy, target, (directory or Path.cwd()).resolve(), as_path=as_path,
                             at_network=lambda: _policy(phase, Level.NETWORK, directory))
    if json_out:
        write(json.dumps(verdict.to_dict(), indent=2) + "\n")
    else:
        write(f"{'ALLOWED' if verdict.allowed else 'BLOCKED'}: {verdict.target} (level {policy.level.value})" + "\n")
        write(f"  why:  {verdict.reason}" + "\n")
        if verdict.rule:
            write(f"  rule: {verdict.rule}" + "\n")
        if verdict.fix and not verdict.allowed:
            write(f"  to change it: {verdict.fix}" + "\n")
    raise typer.Exit(0 if verdict.allowed else 1)


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Inspect the sandbox policy, or run any command inside it.\n\nExamples:\n\n\b\n"
                        "  gtd sandbox explain --phase build\n  gtd sandbox run -- npm test\n"
                        "  gtd sandbox why registry.npmjs.org:443 --phase build", no_args_is_help=True)
    group.command("explain")(explain)
    group.command("why")(why)
    group.command(
        "run", context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True}
    )(run)
    app.add_typer(group, name="sandbox")


def main() -> None:
    """`python -m gtd.cli.sandbox_cmd ...`: the sandbox commands without the rest of the CLI."""
    from gtd.errors import GtdError

    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    register(app)
    try:
        app(prog_name="gtd")
    except GtdError as exc:
        write(f"gtd: error: {exc}\n", stream=sys.stderr)
        sys.exit(int(exc.exit_code))


if __name__ == "__main__":
    main()
