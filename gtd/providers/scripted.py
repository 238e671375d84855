"""The `scripted` provider: runs gtd.providers.scripted_agent, no model and no network needed.

It goes through exactly the same runner, sandbox and forbidden-tools guard as the real CLIs,
which is what makes the offline demo and the workflow tests meaningful.
"""

from __future__ import annotations

import json
import os
import sys
from importlib import resources
from pathlib import Path

from gtd import workspace_files
from gtd.errors import ConfigError
from gtd.providers.base import AgentOutcome, AgentRequest, CommandSpec, Provider, SandboxNeeds
from gtd.providers.events import AgentEvent, EventKind, json_object
from gtd.providers.guard import forbidden_tools
from gtd.providers.scripted_agent import TURNS_ENV, ScriptError, validate_script
from gtd.sandbox.policy.containment import inside

DEMO_SCRIPT = "demo-script.json"
# Set by gtd's test suite: the scripted provider may play its built-in demo script outside `gtd demo`.
DEMO_SCRIPT_ENV = "GTD_DEMO_SCRIPT"


def refuse_builtin_script(script: str | None, *, demo: bool) -> None:
    """The built-in script plays a canned plan (a counter), whatever goal the person gave: outside
    `gtd demo` and gtd's tests (GTD_DEMO_SCRIPT=1) it would commit work about something else. A
    script of one's own (`script` in the config) is what the person asked for, and runs anywhere."""
    if script or demo or os.environ.get(DEMO_SCRIPT_ENV) == "1":
        return
    from gtd.errors import GtdError
    from gtd.exitcodes import ExitCode

    raise GtdError("the scripted provider plays gtd's built-in demo script (a canned plan for a small counter "
                   "module), not your goal, so it runs only in `gtd demo`. Use a real agent (`--provider claude`, "
                   "`opencode` or `pi`), or give the scripted provider a script of your own (`script` in "
                   ".gtdrc.json). Nothing was done.", exit_code=ExitCode.USAGE)


def default_script_path() -> Path:
    return Path(str(resources.files("gtd.data").joinpath(DEMO_SCRIPT)))


class ScriptedProvider(Provider):
    name = "scripted"
    executable = sys.executable
    forbidden_tools = forbidden_tools("scripted")

    def __init__(self, script: str | Path | None = None, *, config_file: str = "config: script"):
        self.script_path = Path(script).expanduser() if script else default_script_path()
        self._config_file = config_file

    def executable_path(self) -> str | None:
        return sys.executable

    def host_executable(self) -> str | None:
        return sys.executable

    def version(self) -> str | None:
        from gtd import __version__ as gtd_version  # noqa: PLC0415

        return gtd_version

    def sandbox_needs(self, workspace: Path | None = None) -> SandboxNeeds:
        return SandboxNeeds()

    def load_script(self, base: Path | None = None) -> dict[str, list[dict]]:
        """Read and check the whole script on the host; a bad script is a usage error naming the place."""
        path = self.script_path if self.script_path.is_absolute() or base is None else base / self.script_path
        try:
            # named by a config layer, maybe a project's: read like a workspace file (no symlinks, no FIFOs)
            if path is self.script_path:
                text = _read_script_file(path, base)
            else:
                text = workspace_files.read_text(base, self.script_path)
            if text is None:
                raise FileNotFoundError(2, "No such file or directory")
            data = json.loads(text)
        except workspace_files.UnsafeWorkspacePath as exc:
            raise ConfigError(self._config_file, "script", f"cannot read {path}: {exc.reason}") from exc
        except OSError as exc:
            raise ConfigError(self._config_file, "script", f"cannot read {path}: {exc.strerror or exc}") from exc
        except json.JSONDecodeError as exc:
            raise ConfigError(str(path), "", f"not valid JSON: {exc}") from exc
        try:
            return validate_script(data, source=str(path))
        except ScriptError as exc:
            raise ConfigError(str(path), "", str(exc).removeprefix(f"{path}: ")) from exc

    def command(self, request: AgentRequest) -> CommandSpec:
        script = self.load_script(Path(request.cwd))
        argv = [sys.executable, "-P", "-m", "gtd.providers.scripted_agent", "--phase", request.phase.value]
        if request.resume_session:
            argv += ["--session", request.resume_session]
        argv.append(str(self.script_path))
        env = {TURNS_ENV: json.dumps(script.get(request.phase.value, []))}
        return CommandSpec(argv=argv, env=env, stdin_data=request.prompt.encode())

    def parse_line(self, line: str) -> list[AgentEvent]:
        data = json_object(line)
        if data is None or "kind" not in data:
            return []
        try:
            return [AgentEvent.from_dict(data)]
        except (ValueError, TypeError):
            return []

    def outcome(self, exit_code: int, events: list[AgentEvent]) -> AgentOutcome:
        session_id = next((e.session_id for e in events if e.session_id), None)
        errors = [e.text for e in events if e.kind == EventKind.ERROR and e.text]
        ended = any(e.kind == EventKind.END and not e.is_error for e in events)
        if exit_code == 0 and ended and not errors:
            return AgentOutcome(True, None, session_id)
        reason = "; ".join(errors) or (f"the scripted agent exited with status {exit_code}" if exit_code else
                                        "the scripted agent ended without finishing")
        return AgentOutcome(False, reason, session_id)


def _read_script_file(path: Path, workspace: Path | None) -> str | None:
    """A script named by an absolute or `~` path, None when missing. The name may come from a project's
    config (package.json's "gtd" section, which the agent can edit) and the file may be in the workspace,
    so it is read by workspace_files' rules: never through a symlink (one the agent put in place of the
    person's script would have gtd read a file of its choosing), a regular file only (a FIFO would hang
    gtd, /dev/zero exhaust its memory), capped. In the workspace no component is followed; outside it the
    directories are the person's own layout and are resolved, the file itself is not followed."""
    spelled = os.path.abspath(path)
    workspaces = {os.path.abspath(workspace), os.path.realpath(workspace)} if workspace is not None else set()
    if any(inside(spelled, ws) for ws in workspaces):
        return workspace_files.read_text(workspace, spelled)
    directory = os.path.realpath(os.path.dirname(spelled))
    return workspace_files.read_text(Path(directory), os.path.basename(spelled))
