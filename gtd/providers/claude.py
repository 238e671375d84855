"""Claude Code (`claude -p --output-format stream-json`), parsed into the common event model.

Permissions: the OS sandbox is the boundary, so in phases that may edit the workspace claude runs
with `bypassPermissions` (IS_SANDBOX=1 makes that allowed as root). In phases restricted to a few
files (plan: TODO.md) it runs in `dontAsk` mode with an allow-list: every non-editing tool, plus
Edit/Write on exactly those files. The interactive tools are removed with `--disallowedTools`
and watched for in the stream by the runner either way.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from gtd.providers.agent_dirs import AgentDirs, write_json
from gtd.providers.base import AgentOutcome, AgentRequest, CommandSpec, Provider, SandboxNeeds
from gtd.providers.claude_login import EXPIRY_MARGIN_SECONDS, ClaudeLogin, read_login_file
from gtd.providers.cloud_credentials import CloudCredentials, claude_cloud, claude_cloud_hosts, cloud_credentials
from gtd.providers.model_routes import anthropic_route
from gtd.providers.endpoints import ANTHROPIC_DEFAULT, anthropic_base_url, host_port
from gtd.providers.events import AgentEvent, EventKind, json_object
from gtd.providers.guard import CLAUDE_EDIT_TOOLS, CLAUDE_INTERACTIVE, CLAUDE_TOOLS

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Any

CREDENTIAL_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_CUSTOM_HEADERS",
                  "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL")
# Files in the config dir that grant powers or that claude loads as instructions: written by gtd (or
# nobody), read-only for the agent. Its project's auto memory (projects/<slug>/memory) too: see memory_dirs.
PROTECTED_NAMES = ("settings.json", "settings.local.json", ".claude.json", "CLAUDE.md", "hooks", "plugins",
                   "commands", "agents", "skills", "output-styles", "keybindings.json", ".credentials.json",
                   "rules")


class ClaudeProvider(Provider):
    name = "claude"
    executable = "claude"
    forbidden_tools = CLAUDE_INTERACTIVE
    answers_without_tools = True

    @property
    def login_hint(self) -> str:
        hint = ("run `claude` once on this machine and log in with /login (gtd reuses that login), or set "
                "ANTHROPIC_API_KEY (ANTHROPIC_BASE_URL for another endpoint)")
        if not self.login_inside and subscription_login() is not None and not _api_key_set():
            hint += ("; if `claude` works outside gtd, this claude may not accept gtd's placeholder login: set "
                     "sandbox.claudeLogin to \"inside\" in your user config (docs/credential-gateway.md)")
        return hint

    login_inside = False  # sandbox.claudeLogin `inside`: the subscription login bound in read-only (issue 21's way)

    def __init__(self, config_dir: Path | None = None):
        self._dirs = AgentDirs("claude", config_dir)  # the project's own (agent_dirs.py)

    @property
    def config_dir(self) -> Path:
        return self._dirs.path

    def for_review(self) -> "ClaudeProvider":
        """Its own config dir: the reviewer may run while the agent does, and prepare() resets the dir's files."""
        reviewer = ClaudeProvider()
        reviewer._dirs = self._dirs.reviewer()
        reviewer.models = self.models
        reviewer.login_inside = self.login_inside
        return reviewer

    def sandbox_needs(self, workspace: Path | None = None) -> SandboxNeeds:
        self._dirs.use(workspace)
        needs = SandboxNeeds(
            model_hosts=[host_port(anthropic_base_url() or ANTHROPIC_DEFAULT)],
            writable_dirs=[self.config_dir],
            protected_paths=[*(self.config_dir / name for name in PROTECTED_NAMES),
                             *memory_dirs(self.config_dir, workspace)],
            env_passthrough=list(CREDENTIAL_ENV),
        )
        _drop_planted_links(self.config_dir)
        _make_memory_dirs(self.config_dir, workspace)
        login = subscription_login()
        # The real login stays on the host: claude gets a placeholder file, the gateway the real token.
        stand_in = None if _api_key_set() else host_login(self.config_dir / LOGIN_NAME)
        needs.model_routes = [anthropic_route(login=stand_in)]
        if login is not None and stand_in is not None and self.login_inside:  # sandbox.claudeLogin `inside`: read-only
            needs.login_files[self.config_dir / LOGIN_NAME] = (login, f"claude's subscription login ({login}), "
                                                                      "sandbox.claudeLogin: inside")
            needs.model_routes = []
        if stand_in is not None:  # the login is what claude uses: it asks Anthropic's API about its account
            account = host_port(ANTHROPIC_DEFAULT)
            if account not in needs.model_hosts:
                needs.model_hosts.append(account)
                needs.model_host_origins[account] = f"claude's subscription login ({stand_in.source}): its account API"
        cloud = claude_cloud()  # CLAUDE_CODE_USE_BEDROCK / CLAUDE_CODE_USE_VERTEX: signed on the host, or as before
        if cloud is not None:
            from gtd.providers.cloud_routes import claude_cloud_route, switches  # botocore & co. only when on a cloud

            kind, why = cloud
            route, gap = claude_cloud_route(kind, why, workspace=workspace)
            if route is not None:  # the cloud identity stays on the host (cloud_routes.py)
                needs.model_routes = [route]
                needs.add_cloud(CloudCredentials(env={name: f"{kind} behind gtd's gateway, chosen by {why}"
                                                      for name in switches(kind)}))
                return needs
            for rule in claude_cloud_hosts(kind):
                needs.model_hosts.append(rule)
                needs.model_host_origins[rule] = why
            needs.add_cloud(cloud_credentials(kind, why, Path(os.environ.get("HOME") or Path.home()), workspace=workspace))
            needs.model_routes = []  # no way to sign on the host: as before, and doctor says why
            needs.gateway_gaps[kind] = gap
        return needs

    def prepare(self, gateway: dict[str, str] | None = None) -> None:
        """Write the config files the agent must not choose itself (before every run, on the host). With the
        credential gateway, a subscription login is refreshed on the host if it must be (or the run stops)."""
        write_json(self.config_dir / "settings.json", {
            "permissions": {"deny": sorted(CLAUDE_INTERACTIVE)},
            "disableAllHooks": True,
            "enableAllProjectMcpServers": False,
            "includeCoAuthoredBy": False,
        })
        # Reset each run: an MCP server or allow-rule planted here must not survive into the next run.
        write_json(self.config_dir / ".claude.json", {"hasCompletedOnboarding": True, "autoUpdates": False})
        behind = gateway and "anthropic" in gateway and not _api_key_set()
        login = host_login(self.config_dir / LOGIN_NAME) if behind else None
        if login is not None:
            login.token()
        else:
            check_login_fresh()

    def command(self, request: AgentRequest) -> CommandSpec:
        self._dirs.use(Path(request.cwd))
        self.prepare(request.gateway)
        argv = [self.executable_path() or self.executable, "-p", "--output-format", "stream-json", "--verbose"]
        if not request.tools:  # `--tools ""`: no tool at all; the system prompt replaces claude's own
            argv += ["--tools", "", "--permission-mode", "dontAsk", "--system-prompt", request.system_prompt or ""]
            if request.model:
                argv += ["--model", request.model]
            return CommandSpec(argv=argv, env=self._env(), stdin_data=request.prompt.encode())
        disallowed = set(CLAUDE_INTERACTIVE)
        if request.editable_paths is None:
            argv += ["--permission-mode", "bypassPermissions"]
        else:
            allowed = sorted(CLAUDE_TOOLS - CLAUDE_INTERACTIVE - CLAUDE_EDIT_TOOLS)
            for path in request.editable_paths:
                allowed += [f"Edit(./{path})", f"Write(./{path})"]
            disallowed |= {"NotebookEdit"}
            argv += ["--permission-mode", "dontAsk", "--allowedTools=" + ",".join(allowed)]
        argv.append("--disallowedTools=" + ",".join(sorted(disallowed)))
        if request.model:
            argv += ["--model", request.model]
        if request.system_prompt:
            argv += ["--append-system-prompt", request.system_prompt]
        if request.resume_session:
            argv += ["--resume", request.resume_session]
        # The prompt goes on stdin: no argv length limit, and `-p` reads it from there.
        return CommandSpec(argv=argv, env=self._env(), stdin_data=request.prompt.encode())

    def _env(self) -> dict[str, str]:
        return {
            "CLAUDE_CONFIG_DIR": str(self.config_dir),
            "IS_SANDBOX": "1",  # we are: allows bypassPermissions as root
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "2",
            "DISABLE_AUTOUPDATER": "1",
        }

    def parse_line(self, line: str) -> list[AgentEvent]:
        data = json_object(line)
        if data is None:
            return []
        kind = data.get("type")
        if kind == "system" and data.get("subtype") == "api_retry":
            status = data.get("error_status")
            return [AgentEvent(EventKind.RETRY, raw=data, text=(
                f"API error{f' {status}' if status else ''} ({data.get('error') or 'no detail'}), retrying "
                f"(attempt {data.get('attempt', '?')} of {data.get('max_retries', '?')})"))]
        if kind == "system" and data.get("subtype") == "init":
            return [AgentEvent(EventKind.START, session_id=data.get("session_id"), model=data.get("model"),
                               tools=list(data.get("tools") or []), raw=data)]
        if kind == "assistant":
            return [e for block in _blocks(data) for e in _assistant_block(block, data)]
        if kind == "user":
            return [e for block in _blocks(data) for e in _tool_result(block, data)]
        if kind == "result":
            is_error = bool(data.get("is_error")) or data.get("subtype", "success") != "success"
            return [AgentEvent(EventKind.END, text=data.get("result") if isinstance(data.get("result"), str) else None,
                               session_id=data.get("session_id"), usage=data.get("usage"),
                               cost_usd=data.get("total_cost_usd"), is_error=is_error, raw=data)]
        return []

    def outcome(self, exit_code: int, events: list[AgentEvent]) -> AgentOutcome:
        session_id = next((e.session_id for e in events if e.session_id), None)
        result = next((e for e in reversed(events) if e.kind == EventKind.END), None)
        if result is None:
            return AgentOutcome(False, f"claude exited with status {exit_code} without a result", session_id)
        if result.is_error:
            raw = result.raw or {}
            status = raw.get("api_error_status")
            detail = result.text or raw.get("subtype") or "error"
            errors = raw.get("errors")
            if isinstance(errors, list) and errors:
                detail += ": " + "; ".join(str(e) for e in errors[:3])
            return AgentOutcome(False, f"claude reported an error{f' (API status {status})' if status else ''}: {detail}",
                                session_id)
        if exit_code != 0:
            return AgentOutcome(False, f"claude exited with status {exit_code}", session_id)
        return AgentOutcome(True, None, session_id)


def memory_dirs(config_dir: Path, workspace: Path | None) -> list[Path]:
    """claude's auto memory for the project (projects/<slug>/memory, loaded into every request's context):
    read-only, so a plan cannot leave instructions for the next run. The slug is the path with every
    character but letters and digits made `-`, as claude spells it (for the path as given and resolved)."""
    if workspace is None:
        return []
    import re

    spellings = dict.fromkeys((os.path.abspath(workspace), os.path.realpath(workspace)))
    return [config_dir / "projects" / re.sub(r"[^A-Za-z0-9]", "-", p) / "memory" for p in spellings]


def _make_memory_dirs(config_dir: Path, workspace: Path | None) -> None:
    """Make the project's memory dirs on the host (empty, then bound read-only): claude finds a directory
    it cannot write rather than a placeholder file. A link planted on the way (projects/ is writable) is
    removed first, never followed."""
    for memory in memory_dirs(config_dir, workspace):
        current = config_dir
        try:
            config_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            return
        for part in memory.relative_to(config_dir).parts:
            current = current / part
            try:
                if current.is_symlink() or (current.exists() and not current.is_dir()):
                    current.unlink()
                current.mkdir(mode=0o700, exist_ok=True)
            except OSError:
                break  # left for the mount plan, which protects what it finds (fails closed)


def _blocks(data: dict) -> list[dict]:
    content = (data.get("message") or {}).get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _assistant_block(block: dict, data: dict) -> list[AgentEvent]:
    if block.get("type") == "text" and block.get("text"):
        return [AgentEvent(EventKind.TEXT, text=block["text"], raw=data)]
    if block.get("type") == "tool_use":
        tool_input = block.get("input") if isinstance(block.get("input"), dict) else {"input": block.get("input")}
        return [AgentEvent(EventKind.TOOL_CALL, tool=block.get("name"), tool_input=tool_input, tool_id=block.get("id"),
                           raw=data)]
    return []


def _tool_result(block: dict, data: dict) -> list[AgentEvent]:
    if block.get("type") != "tool_result":
        return []
    return [AgentEvent(EventKind.TOOL_RESULT, tool_id=block.get("tool_use_id"), text=_text_of(block.get("content")),
                       is_error=bool(block.get("is_error")), raw=data)]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text")
    return "" if content is None else str(content)


LOGIN_NAME = ".credentials.json"


def subscription_login() -> Path | None:
    """The person's `claude` /login file (`~/.claude/.credentials.json`), when it exists. It is bound
    read-only into gtd's claude config dir at the start of every sandbox (sandbox_needs); the file
    itself, a link or a copy, never goes into that dir."""
    own = Path(os.environ.get("HOME") or Path.home()) / ".claude" / LOGIN_NAME
    return own if os.path.lexists(own) else None


def host_login(target: Path) -> ClaudeLogin | None:
    """The person's login as the gateway reads it on the host, for claude looking at `target`: the login file,
    or on macOS, when there is none, the login claude keeps in the Keychain (claude_keychain.py)."""
    login = subscription_login()
    if login is not None:
        return ClaudeLogin(login, target)
    if sys.platform == "darwin":
        from gtd.providers.claude_keychain import keychain_login

        return keychain_login(target)
    return None


def check_login_fresh(now: float | None = None) -> None:
    """Stop before the agent starts when the subscription login's access token has expired: the CLI would
    refresh it and could not save the new one (the file is read-only inside the sandbox), and a refresh
    token is single-use, so the person's own `claude` would be logged out. An API key in the environment
    takes precedence over the login file, and a file gtd cannot read is left to the CLI to report."""
    if _api_key_set():
        return
    login = subscription_login()
    if login is None:
        return
    import time

    from gtd.errors import GtdError

    try:
        expires_ms = read_login_file(login)["claudeAiOauth"]["expiresAt"]
    except (OSError, ValueError, KeyError, TypeError, GtdError):  # not a regular file, or not a login: the CLI says
        return
    if not isinstance(expires_ms, (int, float)):
        return
    now = time.time() if now is None else now
    if expires_ms / 1000 > now + EXPIRY_MARGIN_SECONDS:
        return
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(expires_ms / 1000))
    raise GtdError(
        f"your Claude login's access token expired ({when}): claude inside the sandbox cannot save a refreshed "
        f"one, and refreshing there would log your own claude out. Run `claude -p hi` once outside gtd to refresh "
        f"it (or set ANTHROPIC_API_KEY), then run gtd again")


def _api_key_set() -> bool:
    """A credential in the environment, which claude uses instead of the login file."""
    return any(os.environ.get(k) for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"))


def _drop_planted_links(config_dir: Path) -> None:
    """Remove symlinks at the protected names of gtd's own claude config dir (the host's side, before the
    mounts are planned). A link there cannot carry a read-only mount, so the sandbox would protect the
    whole dir instead and claude could not start: the link to the login that earlier gtd versions made,
    or one an agent made in a session where the name was still missing."""
    for name in PROTECTED_NAMES:
        path = config_dir / name
        try:
            if path.is_symlink():
                path.unlink()
        except OSError:
            pass  # left for the mount plan, which then protects the whole dir (fails closed)
