"""opencode (`opencode run --format json`), parsed into the common event model.

opencode has no system-prompt or tool flags: gtd passes a whole config in OPENCODE_CONFIG_CONTENT
(nothing is written to the repo) defining a `gtd` agent with the phase's system prompt and a
`permission` map: interactive tools denied (which removes them), edits limited to the phase's
files where the phase restricts them, everything else allowed (the OS sandbox is the boundary;
an `ask` would be auto-rejected headless and stop the agent).

opencode retries a failed model API request (5xx, 429, no connection) silently in its JSON stream;
its log says so. gtd runs it with `--print-logs --log-level ERROR` (the log on stderr, errors only)
and turns each "stream error" of an agent's request into a retry event.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from gtd.providers.agent_dirs import AgentDirs, write_json
from gtd.providers.base import AgentOutcome, AgentRequest, CommandSpec, Provider, SandboxNeeds
from gtd.providers.cli_models import CliModelConfig, chosen_models, model_hosts, opencode_config, provider_of
from gtd.providers.cli_cloud_routes import PROVIDER as BEDROCK_PROVIDER, ROUTE as BEDROCK_ROUTE, add_cli_clouds, through_gateway
from gtd.providers.endpoints import (ANTHROPIC_DEFAULT, OPENAI_DEFAULT, anthropic_base_url, host_port,
                                     openai_base_url, with_v1)
from gtd.providers.events import AgentEvent, EventKind, json_object
from gtd.providers.guard import OPENCODE_INTERACTIVE
from gtd.providers.model_routes import BUILT_IN, routes_for, user_key_var
from gtd.record import replace

CREDENTIAL_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                  "OPENROUTER_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY", "GROQ_API_KEY",
                  "DEEPSEEK_API_KEY", "XAI_API_KEY", "MISTRAL_API_KEY")
OPENAI_COMPATIBLE = "gtd-openai"  # the provider id gtd defines for OPENAI_BASE_URL
AGENT = "gtd"
GITIGNORE = ("node_modules", "package.json", "package-lock.json", "bun.lock", ".gitignore")
# opencode's XDG dirs under gtd's agent dir; config/ holds only files gtd writes.
# One logfmt field of opencode's log: key=value or key="quoted value".
LOG_FIELD = re.compile(r'([\w.]+)=("(?:[^"\\]|\\.)*"|\S*)')
XDG = {"XDG_DATA_HOME": "data", "XDG_CONFIG_HOME": "config", "XDG_STATE_HOME": "state", "XDG_CACHE_HOME": "cache"}


class OpencodeProvider(Provider):
    name = "opencode"
    login_hint = ("set the model provider's API key where you run gtd (ANTHROPIC_API_KEY, OPENAI_API_KEY, "
                  "OPENROUTER_API_KEY, ...); under gtd opencode runs with its own state dir, so an `opencode auth "
                  "login` is not used")
    executable = "opencode"
    forbidden_tools = OPENCODE_INTERACTIVE
    announces_tool_start = False  # tool_use comes when the tool has ended: the runner watches the process tree
    answers_without_tools = True

    def __init__(self, home: Path | None = None):
        self._dirs = AgentDirs("opencode", home)  # the project's own (agent_dirs.py)

    @property
    def home(self) -> Path:
        return self._dirs.path

    def for_review(self) -> "OpencodeProvider":
        """Its own dirs: the reviewer may run while the agent does, and prepare() rewrites the config."""
        reviewer = OpencodeProvider()
        reviewer._dirs = self._dirs.reviewer()
        reviewer.models = self.models
        return reviewer

    def user_config(self, workspace: Path | None = None) -> CliModelConfig:
        """The person's own opencode settings (default model, providers they defined): user-level only."""
        return opencode_config(Path(os.environ.get("HOME") or Path.home()), workspace=workspace)

    def sandbox_needs(self, workspace: Path | None = None) -> SandboxNeeds:
        self._dirs.use(workspace)
        hosts = [host_port(anthropic_base_url() or ANTHROPIC_DEFAULT), host_port(openai_base_url() or OPENAI_DEFAULT)]
        own = self.user_config(workspace)
        chosen = chosen_models("opencode", own, self.models)
        extra = [h for h in model_hosts(own, chosen) if h.rule not in hosts]
        return add_cli_clouds(SandboxNeeds(
            model_hosts=list(dict.fromkeys(hosts + [h.rule for h in extra])),
            model_host_origins={h.rule: h.origin for h in extra},
            writable_dirs=[self.home / d for d in ("data", "state", "cache")],
            protected_paths=[self.home / "config", *own.sources],
            read_dirs=[self.home / "config"],
            env_passthrough=list(CREDENTIAL_ENV),
            model_routes=routes_for("opencode", own, chosen, CREDENTIAL_ENV),
        ), "opencode", own, chosen, workspace=workspace)

    def config(self, request: AgentRequest, own: CliModelConfig | None = None) -> dict:
        """The whole opencode config for one run. `own`: the person's settings, whose definition of
        the run's provider (a local server, a gateway) is carried over."""
        permission: dict = {"*": "allow", "external_directory": "allow", "doom_loop": "allow"}
        for name in sorted(OPENCODE_INTERACTIVE):
            permission[name] = "deny"
        if request.editable_paths is not None:
            edit = {"*": "deny"}
            for path in request.editable_paths:
                edit[path] = "allow"
                edit[str(Path(request.cwd) / path)] = "allow"
            permission["edit"] = edit
        if not request.tools:  # one-shot answer: every tool switched off and denied
            permission = {"*": "deny"}
        agent = {"mode": "primary", "permission": permission,
                 "description": f"gtd {request.phase.value} phase (headless)"}
        if not request.tools:
            agent["tools"] = {"*": False}
        if request.system_prompt:
            agent["prompt"] = request.system_prompt
        config: dict = {
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": False,
            "share": "disabled",
            "permission": permission,
            "agent": {AGENT: agent},
        }
        providers = _providers(request.model, request.gateway)
        chosen = provider_of(request.model)
        if own is not None and chosen and chosen not in providers and chosen in own.providers:
            providers[chosen] = _through_gateway(chosen, own.providers[chosen], request.gateway)
        if BEDROCK_ROUTE in (request.gateway or {}):  # Bedrock signed on the host (cli_cloud_routes.py)
            providers[BEDROCK_PROVIDER] = through_gateway("opencode", (own.providers if own else {}).get(BEDROCK_PROVIDER),
                                                          request.gateway[BEDROCK_ROUTE])
        if providers:
            config["provider"] = providers
        return config

    def prepare(self) -> None:
        """The config dir is read-only inside the sandbox: gtd writes what opencode would create there."""
        config_dir = self.home / "config" / "opencode"
        if config_dir.is_dir() and not config_dir.is_symlink():
            config_dir.chmod(0o755)
        write_json(config_dir / "opencode.json", {"$schema": "https://opencode.ai/config.json"})
        ignore = config_dir / ".gitignore"
        if not ignore.is_file():
            ignore.write_text("".join(f"{name}\n" for name in GITIGNORE))
        # Without write bits too: opencode asks access(W_OK) before installing its plugin package there, and
        # Landlock (the Landlock backend: no read-only mount) does not answer access(2); a "yes" sent it to npm.
        config_dir.chmod(0o555)

    def command(self, request: AgentRequest) -> CommandSpec:
        self._dirs.use(Path(request.cwd))
        self.prepare()
        own = self.user_config(Path(request.cwd))
        if not request.model and own.model:  # gtd runs opencode with its own config: pass the person's default
            request = replace(request, model=own.model)
        argv = [self.executable_path() or self.executable, "run", "--print-logs", "--log-level", "ERROR",
                "--format", "json", "--agent", AGENT]
        if request.model:
            argv += ["-m", request.model]
        if request.resume_session:
            argv += ["--session", request.resume_session]
        argv += ["--", request.prompt]
        env = {key: str(self.home / sub) for key, sub in XDG.items()}
        env.update({
            "OPENCODE_CONFIG_CONTENT": json.dumps(self.config(request, own)),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_PROJECT_CONFIG": "1",  # gtd alone decides permissions; the repo cannot widen them
        })
        return CommandSpec(argv=argv, env=env)

    def parse_line(self, line: str) -> list[AgentEvent]:
        data = json_object(line)
        if data is None:
            return []
        kind, part = data.get("type"), data.get("part") or {}
        session_id = data.get("sessionID") or part.get("sessionID")
        if kind == "step_start":
            return [AgentEvent(EventKind.START, session_id=session_id, raw=data)]
        if kind == "text" and part.get("text"):
            return [AgentEvent(EventKind.TEXT, text=part["text"], session_id=session_id, raw=data)]
        if kind == "tool_use":
            state = part.get("state") or {}
            status = state.get("status")
            tool_input = state.get("input") if isinstance(state.get("input"), dict) else {}
            name = part.get("tool")
            if name == "invalid" and isinstance(tool_input.get("tool"), str):
                # A removed (denied) or unknown tool comes back as `invalid`: the model still called it.
                name = tool_input["tool"]
            call = AgentEvent(EventKind.TOOL_CALL, tool=name, tool_input=tool_input,
                              tool_id=part.get("callID") or part.get("id"), session_id=session_id, raw=data)
            if status not in ("completed", "error"):
                return [call]
            output = state.get("output") if status == "completed" else state.get("error")
            result = AgentEvent(EventKind.TOOL_RESULT, tool=name, tool_id=call.tool_id,
                                text=output if isinstance(output, str) else json.dumps(output),
                                is_error=status == "error" or part.get("tool") == "invalid" or _metadata_error(state), session_id=session_id, raw=data)
            return [call, result]
        if kind == "step_finish":
            # Every step is one model request with its own tokens and cost: a `tool-calls` step is a step
            # of the loop (USAGE, counted too), any other reason ends the run (END, with the last step's).
            tokens = part.get("tokens")
            kind_of = EventKind.USAGE if part.get("reason") == "tool-calls" else EventKind.END
            return [AgentEvent(kind_of, session_id=session_id, usage=tokens if isinstance(tokens, dict) else None,
                               cost_usd=part.get("cost"), text=part.get("reason"), raw=data)]
        if kind == "error":
            return [AgentEvent(EventKind.ERROR, text=_error_text(data.get("error")), session_id=session_id,
                               is_error=True, raw=data)]
        return []

    def parse_stderr_line(self, line: str) -> list[AgentEvent]:
        """opencode's log line for a failed model request (`message="stream error"`), which it then
        retries, as a RETRY event. The title request (`small=true`) is left out: it does not hold up
        the agent. Every other log line is only kept for the error message."""
        if "level=ERROR" not in line or "stream error" not in line:
            return []
        fields = {key: _unquote(value) for key, value in LOG_FIELD.findall(line)}
        if fields.get("message") != "stream error" or fields.get("small") == "true":
            return []
        error = fields.get("error.error") or fields.get("error") or ""
        detail = error.split(": ", 1)[1] if error.startswith("AI_") and ": " in error else error
        detail = " ".join(detail.split())[:200] or "no detail"
        return [AgentEvent(EventKind.RETRY, text=f"API error ({detail}), opencode is retrying",
                           session_id=fields.get("session.id"), raw=fields)]

    def outcome(self, exit_code: int, events: list[AgentEvent]) -> AgentOutcome:
        session_id = next((e.session_id for e in events if e.session_id), None)
        errors = [e.text for e in events if e.kind == EventKind.ERROR]
        if errors:
            return AgentOutcome(False, "opencode reported an error: " + "; ".join(t or "unknown error" for t in errors),
                                session_id)
        if exit_code != 0:
            return AgentOutcome(False, f"opencode exited with status {exit_code}", session_id)
        finals = [e for e in events if e.kind == EventKind.END]
        if not finals:
            return AgentOutcome(False, "opencode finished without completing a step", session_id)
        return AgentOutcome(True, None, session_id)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            return json.loads(value)
        except ValueError:
            return value[1:-1]
    return value


def _metadata_error(state: dict) -> bool:
    """bash reports a non-zero exit in metadata, not as a failed tool."""
    meta = state.get("metadata") or {}
    code = meta.get("exit")
    return isinstance(code, int) and code != 0


def _error_text(error) -> str:
    if not isinstance(error, dict):
        return str(error or "unknown error")
    data = error.get("data") or {}
    message = data.get("message") if isinstance(data, dict) else None
    name = error.get("name") or "Error"
    status = data.get("statusCode") if isinstance(data, dict) else None
    return f"{name}{f' (status {status})' if status else ''}: {message or json.dumps(data)[:500]}"


def _providers(model: str | None, gateway: dict[str, str] | None = None) -> dict:
    """Provider definitions for custom endpoints (ANTHROPIC_BASE_URL / OPENAI_BASE_URL), with the model declared.
    With gtd's credential gateway (`gateway`: route -> base URL inside the sandbox), every provider behind it
    is pointed there: Anthropic and OpenAI always, each built-in one (OpenRouter, Mistral, ...) routed."""
    gateway = gateway or {}
    provider_id, _, model_id = (model or "").partition("/")
    out: dict = {}
    if openai_base_url():
        out[OPENAI_COMPATIBLE] = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "OpenAI-compatible endpoint (OPENAI_BASE_URL)",
            "options": {"baseURL": gateway.get("openai") or openai_base_url(), "apiKey": "{env:OPENAI_API_KEY}"},
            "models": {model_id: {"name": model_id, "tool_call": True}} if provider_id == OPENAI_COMPATIBLE and model_id else {},
        }
    elif "openai" in gateway:
        out["openai"] = {"options": {"baseURL": gateway["openai"]}}
    base = gateway.get("anthropic") or anthropic_base_url()
    if base:
        entry: dict = {"options": {"baseURL": with_v1(base)}}
        if provider_id == "anthropic" and model_id:
            entry["models"] = {model_id: {"name": model_id, "tool_call": True}}
        out["anthropic"] = entry
    for route in gateway:  # every built-in provider behind it, chosen or only holding a key
        if route in BUILT_IN:
            out[route] = {"options": {"baseURL": gateway[route]}}
    return out


def _through_gateway(provider: str, entry: dict, gateway: dict[str, str] | None) -> dict:
    """The person's own provider definition, pointed at the gateway when it is behind it: its base URL the
    gateway's, its key the placeholder under the variable gtd gives it (never the key their config holds)."""
    if not gateway or provider not in gateway:
        return entry
    options = dict(entry.get("options") or {}) if isinstance(entry.get("options"), dict) else {}
    options["baseURL"] = gateway[provider]
    if options.get("apiKey"):
        options["apiKey"] = "{env:%s}" % user_key_var(provider)
    return {**entry, "options": options}
