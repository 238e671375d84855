"""`gtd sandbox run` itself, without typer: the one implementation both entries share.

`gtd sandbox run -- CMD` is run once per command by scripts and agents, so its start-up is part of
every command's cost (issue 13: at most bare bubblewrap + 60 ms). The typer command
(cli/sandbox_cmd.py) parses its options and calls `run_in_sandbox`; the console script's entry
(cli/entry.py) calls `fast_main` first, which parses the same options by hand and calls the same
`run_in_sandbox`, so typer, click and the rest of the command tree are never imported. Anything
`fast_main` does not recognise (help, an unknown option, a value typer would refuse, completion)
returns None and the full CLI handles it: the fast entry never decides anything differently, it only
skips the parser.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

from gtd.config.levels import Level, Phase
from gtd.terminal_text import write


def policy_for(phase: Phase | None, level: Level | None, directory: Path | None, *, with_provider: bool = True,
               loaded=None):
    """The sandbox policy for the effective config (validated values, no pydantic models); `loaded`: that
    config, when the caller has loaded it already."""
    from gtd.config.view import ConfigView
    from gtd.sandbox.policy.sandbox_policy import build_policy

    loaded = loaded or load_config_at(directory)
    workspace = loaded.repo_root or (directory or Path.cwd()).resolve()
    config = ConfigView(loaded.values)
    needs = provider_needs(config, workspace) if with_provider else None
    return build_policy(config, workspace=workspace, phase=phase, level=level, needs=needs)


def load_config_at(directory: Path | None):
    """The effective config, the same way every other command loads it."""
    try:
        from gtd.cli.context import load_at

        return load_at((directory or Path.cwd()).resolve(), {})
    except ImportError:  # the escalation layer (project trust filter) is not installed yet
        from gtd.config.loader import load_config

        return load_config((directory or Path.cwd()).resolve())


def provider_needs(config, workspace: Path | None = None):
    """What the configured agent CLI needs (model API host, state dirs): part of every phase's policy."""
    try:
        from gtd.providers.registry import get_provider

        return get_provider(config.provider, config).sandbox_needs(workspace)
    except Exception:  # noqa: BLE001 - no provider installed: explain the policy without its needs
        return None


def run_in_sandbox(command: list[str], phase: Phase | None, level: Level | None, directory: Path | None,
                   non_interactive: bool, pending_json: Path | None) -> int:
    """Run `command` under the policy; gtd's exit status (the command's own, or 4 with requests pending)."""
    loaded = load_config_at(directory)
    if sys.platform.startswith("linux"):
        _first_cgroup_ready(loaded)
    try:
        return _run_in_sandbox(command, phase, level, directory, non_interactive, pending_json, loaded)
    finally:
        if sys.platform.startswith("linux"):
            from gtd.sandbox.linux.limits import drop_ready

            drop_ready()


def _first_cgroup_ready(loaded) -> None:
    """The first command's cgroup made and its move primed before the policy is built (limits.make_ready)."""
    from gtd.config.view import ConfigView
    from gtd.sandbox.linux.limits import make_ready
    from gtd.sandbox.policy.resource_limits import ResourceLimits

    try:
        limits = ResourceLimits.from_config(ConfigView(loaded.values).sandbox.limits)
    except ValueError:
        return  # the policy build reports it
    make_ready(limits)


def _run_in_sandbox(command: list[str], phase: Phase | None, level: Level | None, directory: Path | None,
                    non_interactive: bool, pending_json: Path | None, loaded) -> int:
    from gtd.cli.stderr_tap import StderrTap
    from gtd.sandbox.session import open_sandbox

    policy = policy_for(phase, level, directory, loaded=loaded)
    _refuse_shared_workspace(policy, loaded)
    escalator = _escalator(policy, phase, non_interactive)
    if policy.unrestricted:
        why = "sandbox.enabled is false" if not policy.enabled else "level full was requested"
        write(f"gtd sandbox: WARNING: running without a sandbox ({why})\n", stream=sys.stderr)
    cwd = (directory or Path.cwd()).resolve()
    decider = escalator.network_decider if escalator else None

    from gtd.refusal_tally import RefusalTally, repeats_line

    tally = RefusalTally()  # a client retrying a refused host: one line, and its count at the end

    def on_violation(v) -> None:
        if tally.add(f"{v.kind} {v.target}") == 1:
            _show_refusal(v)
        if escalator:
            escalator.audit.record("violation", **v.to_dict())

    tap = None if policy.unrestricted else StderrTap()
    with open_sandbox(policy, network_decider=decider, on_violation=on_violation, in_step=False) as session, \
            session.passing_ctrl_c() as ctrl_c:
        try:
            proc = session.popen(command, cwd=cwd, stdout=tap.writer if tap and tap.merged else None,
                                 stderr=tap.writer if tap else None)
        finally:
            if tap:
                tap.started()
        ctrl_c.to(proc)
        _collect_from_now_on()
        code = ctrl_c.wait()
        if tap:
            stderr_text = tap.finish()
            _report_refused_writes(policy, cwd, stderr_text, session)
            if code != 0:
                _show_hints(policy, stderr_text, escalator)
    for what, repeats, total in tally.unsaid_repeats():
        write(f"gtd sandbox: {repeats_line(what, repeats, total)}\n", stream=sys.stderr)
    code = code if code >= 0 else 128 - code
    pending = [request.model_dump(mode="json") for request in escalator.headless_denied] if escalator else []
    payload = {"status": "escalation_pending" if pending else "ok", "requests": pending, "commandExitCode": code}
    if pending:
        payload["hint"] = "run `gtd approve` in a terminal, then run the command again"
        write(f"gtd sandbox: {len(pending)} request(s) saved for `gtd approve`\n", stream=sys.stderr)
    if pending_json is not None:
        from gtd.config.writer import atomic_write

        atomic_write(pending_json.absolute(), json.dumps(payload) + "\n")
        return code
    if pending:
        from gtd.exitcodes import ExitCode

        write(json.dumps(payload) + "\n", stream=sys.stderr)  # ASCII JSON: nothing to escape
        return int(ExitCode.ESCALATION_PENDING)
    return code


def _collect_from_now_on() -> None:
    """Garbage collection back on once the command runs (the fast entry turned it off for the start): what
    start-up made is frozen (it lives as long as gtd), so the collections of the proxy's connections, for
    as long as the command runs, never walk it."""
    import gc

    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _show_refusal(v) -> None:
    """A refusal on screen as it happens: what, why, and where to look for the one change that allows it.
    The target is the command's (a path or host it chose), so the suggested command quotes it for the shell:
    pasted, `x; curl …|sh` or `$(…)` stays one argument."""
    import shlex

    why = (f"; see `gtd sandbox why {shlex.quote(v.target)} --level {v.level.value}`"
           if v.kind in ("network", "write") else "")
    write(f"gtd sandbox: refused {v.kind} {v.target} ({v.detail}){why}\n", stream=sys.stderr)


def _show_hints(policy, stderr_text: str, escalator) -> None:
    """A failed command whose error blames the network for a write the sandbox refused (npm's EROFS
    "while trying to fetch"): the refused path, on stderr (stdout stays the command's), and audited.
    A server on the host's loopback is named on stderr only: the audit log is readable inside."""
    from gtd.sandbox.diagnose.hints import split_hints

    told, person_only = split_hints(stderr_text, policy)
    for hint in told + person_only:
        write(hint + "\n", stream=sys.stderr)
    if told and escalator:
        escalator.audit.record("hint", hints=told)


def shared_directories() -> set[str]:
    """Directories other programs write into at any time: the root, HOME and the system's temp dirs."""
    import tempfile

    places = {"/", "/tmp", "/var/tmp", "/dev/shm", tempfile.gettempdir(), os.path.expanduser("~")}
    return {os.path.realpath(p) for p in places if p}


def _refuse_shared_workspace(policy, loaded) -> None:
    """Outside a repository the current directory is the workspace. Where other programs write too (/tmp,
    HOME), a writable workspace would let the command's run take their work for its own: every `.git` they
    create meanwhile is quarantined as planted (gitguard), and their files are the command's to change."""
    if loaded.repo_root is not None or policy.unrestricted or not policy.git_state or not policy.git_state.walked:
        return
    if os.path.realpath(policy.workspace) in shared_directories():
        from gtd.errors import GtdError
        from gtd.exitcodes import ExitCode

        raise GtdError(f"gtd sandbox run: {policy.workspace} is shared with other programs, and the command could "
                       "write in it at this level (and gtd would take what other programs make there meanwhile for the "
                       "command's): cd into a project directory, or pass -C DIR", exit_code=ExitCode.USAGE)


def _report_refused_writes(policy, cwd: Path, stderr_text: str, session) -> None:
    """Writes the command reported as refused (EROFS/EACCES in its error output) that the policy
    indeed refuses: reported and audited like the workflow's, with the rule that decided."""
    if not stderr_text:
        return  # nothing said, nothing refused (and the patterns need not be compiled)
    from gtd.sandbox.diagnose.violations import refused_writes
    from gtd.sandbox.session import Violation

    seen = {v.target for v in session.violations if v.kind == "write"}  # the write watch's (linux/write_watch.py)
    for _, target, reason in refused_writes(stderr_text, policy, cwd):  # whatever the exit status
        if target not in seen:
            session.record_violation(Violation.now("write", target, policy.level, reason))


def _escalator(policy, phase: Phase | None, non_interactive: bool):
    """Live network escalations for `sandbox run` inside a git repository (where rules can be saved)."""
    from gtd.audit import AuditLog
    from gtd.config.loader import find_repo_root

    repo = find_repo_root(policy.workspace)
    if repo is None:
        return None
    audit = AuditLog(repo)
    audit.record("sandbox_run", level=policy.level.value, phase=phase.value if phase else None)
    return _OnDemandEscalator(repo, audit, phase, non_interactive)


class _OnDemandEscalator:
    """The Escalator, built at the first connection no rule allows. Most runs never ask, and the
    escalation layer (prompt, pending store, request models) costs more to import than the whole
    start-up budget of `gtd sandbox run`."""

    def __init__(self, repo: Path, audit, phase: Phase | None, non_interactive: bool):
        self.audit = audit
        self._args = (repo, phase, non_interactive)
        self._escalator = None
        self._lock = threading.Lock()  # the proxy asks from one thread per connection

    def network_decider(self, connection) -> bool:
        with self._lock:
            if self._escalator is None:
                from gtd.escalation.escalator import Escalator, is_interactive

                repo, phase, non_interactive = self._args
                self._escalator = Escalator(repo, interactive=is_interactive(non_interactive), audit=self.audit, phase=phase)
        return self._escalator.network_decider(connection)

    @property
    def headless_denied(self) -> list:
        return self._escalator.headless_denied if self._escalator is not None else []


# -- the fast entry ------------------------------------------------------------------------------

_VALUED = {"--phase": "phase", "--level": "level", "--directory": "directory", "-C": "directory",
           "--pending-json": "pending_json"}


def parse_run_args(args: list[str]) -> dict | None:
    """`sandbox run`'s options and command, parsed as typer parses them, or None for anything else
    (help, an unknown or repeated option, a value typer would refuse, no command): typer answers those."""
    found: dict = {"phase": None, "level": None, "directory": None, "pending_json": None, "non_interactive": False}
    seen: set[str] = set()
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break  # the command: options end at the first argument (allow_interspersed_args off)
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name == "--non-interactive" and not eq:
            key, value = "non_interactive", True
            i += 1
        elif name in _VALUED:
            key = _VALUED[name]
            if not eq:
                if i + 1 >= len(args):
                    return None
                value = args[i + 1]
                i += 1
            i += 1
        else:
            return None
        if key in seen:
            return None  # typer takes the last one: rare, leave it to typer
        seen.add(key)
        found[key] = value
    command = args[i:]
    if not command:
        return None
    try:
        phase = Phase(found["phase"]) if found["phase"] is not None else None
        level = Level(found["level"]) if found["level"] is not None else None
    except ValueError:
        return None
    directory = Path(found["directory"]) if found["directory"] is not None else None
    pending = Path(found["pending_json"]) if found["pending_json"] is not None else None
    return {"command": command, "phase": phase, "level": level, "directory": directory,
            "non_interactive": found["non_interactive"], "pending_json": pending}


def fast_main(argv: list[str]) -> int | None:
    """`gtd sandbox run ...` without the command tree: gtd's exit status, or None when the full CLI
    must handle `argv` (nothing has been done then)."""
    if argv[:2] != ["sandbox", "run"] or any(key.endswith("_COMPLETE") for key in os.environ):
        return None
    parsed = parse_run_args(argv[2:])
    if parsed is None:
        return None
    from gtd.errors import GtdError

    try:
        return run_in_sandbox(**parsed)
    except GtdError as exc:
        write(f"gtd: error: {exc}\n", stream=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP (errors.Terminated: its own exit code)
        from gtd.exitcodes import ExitCode

        write("\ninterrupted\n", stream=sys.stderr)
        return int(getattr(exc, "exit_code", ExitCode.INTERRUPTED))
