"""pi (`pi -p --mode json`), parsed into the common event model.

pi has no permission prompts and no interactive tools; tools can only be chosen with `--tools`.
It cannot limit edits to one file, so in restricted phases it keeps its edit tools and the OS
sandbox alone keeps writes to the phase's file. In json mode pi exits 0 even when the API call
failed: the error is only in the final assistant message (`stopReason: "error"`, `errorMessage`),
so the outcome is read from the stream, not the exit status.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gtd.providers.agent_dirs import AgentDirs, write_json
from gtd.providers.base import AgentOutcome, AgentRequest, CommandSpec, Provider, SandboxNeeds
from gtd.providers.cli_models import CliModelConfig, chosen_models, model_hosts, pi_config, provider_of
from gtd.providers.cli_cloud_routes import PROVIDER as BEDROCK_PROVIDER, ROUTE as BEDROCK_ROUTE, add_cli_clouds, through_gateway
from gtd.providers.endpoints import (ANTHROPIC_DEFAULT, OPENAI_DEFAULT, anthropic_base_url, host_port,
                                     openai_base_url, strip_v1)
from gtd.providers.events import AgentEvent, EventKind, json_object
from gtd.providers.guard import PI_INTERACTIVE
from gtd.providers.model_routes import BUILT_IN, routes_for, user_key_var
from gtd.record import replace

CREDENTIAL_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_OAUTH_TOKEN", "OPENAI_API_KEY",
                  "OPENAI_BASE_URL", "GEMINI_API_KEY", "OPENROUTER_API_KEY", "GROQ_API_KEY", "XAI_API_KEY",
                  "MISTRAL_API_KEY", "DEEPSEEK_API_KEY")
TOOLS = ("read", "bash", "edit", "write")  # grep/find/ls need rg/fd on PATH (else pi downloads them)
OPENAI_COMPATIBLE = "gtd-openai"
PROTECTED_NAMES = ("settings.json", "models.json", "auth.json", "extensions", "hooks", "prompts", "skills",
                   "themes", "tools", "AGENTS.md", "SYSTEM.md", "keybindings.json")


class PiProvider(Provider):
    name = "pi"
    login_hint = ("set the model provider's API key where you run gtd (ANTHROPIC_API_KEY, OPENAI_API_KEY, "
                  "GEMINI_API_KEY, ...); under gtd pi runs with its own agent dir, so a /login in pi is not used")
    executable = "pi"
    forbidden_tools = PI_INTERACTIVE
    answers_without_tools = True

    def __init__(self, home: Path | None = None):
        self._dirs = AgentDirs("pi", home)  # the project's own (agent_dirs.py)

    @property
    def home(self) -> Path:
        return self._dirs.path

    def for_review(self) -> "PiProvider":
        """Its own agent dir: the reviewer may run while the agent does, and prepare() rewrites the dir's files."""
        reviewer = PiProvider()
        reviewer._dirs = self._dirs.reviewer()
        reviewer.models = self.models
        return reviewer

    def user_config(self, workspace: Path | None = None) -> CliModelConfig:
        """The person's own pi settings (default model, models.json providers): user-level only, never
        gtd's own agent dir."""
        environ = {k: v for k, v in os.environ.items() if k != "PI_CODING_AGENT_DIR" or Path(v) != self.home}
        return pi_config(Path(os.environ.get("HOME") or Path.home()), environ, workspace=workspace)

    def sandbox_needs(self, workspace: Path | None = None) -> SandboxNeeds:
        self._dirs.use(workspace)
        hosts = [host_port(anthropic_base_url() or ANTHROPIC_DEFAULT), host_port(openai_base_url() or OPENAI_DEFAULT)]
        own = self.user_config(workspace)
        chosen = chosen_models("pi", own, self.models)
        extra = [h for h in model_hosts(own, chosen) if h.rule not in hosts]
        hosts += [h.rule for h in extra]
        # Only the sessions dir is writable: the rest of the agent dir (settings, models, extensions,
        # AGENTS.md/SYSTEM.md) is outside every writable root, hence read-only, without placeholders.
        return add_cli_clouds(SandboxNeeds(
            model_hosts=list(dict.fromkeys(hosts)),
            model_host_origins={h.rule: h.origin for h in extra},
            writable_dirs=[self.sessions_dir],
            protected_paths=[*(self.home / name for name in PROTECTED_NAMES), *own.sources],
            read_dirs=[self.home],
            env_passthrough=list(CREDENTIAL_ENV),
            model_routes=routes_for("pi", own, chosen, CREDENTIAL_ENV),
        ), "pi", own, chosen, workspace=workspace)

    @property
    def sessions_dir(self) -> Path:
        return self.home / "sessions"

    def prepare(self, request: AgentRequest, own: CliModelConfig | None = None) -> None:
        """gtd's own settings and model definitions, rewritten before every run (read-only inside).
        The person's own definition of the run's provider (`own`, from their models.json) is carried over."""
        write_json(self.home / "settings.json", {"quietStartup": True, "collapseChangelog": True})
        providers = _providers(request.model, request.gateway)
        chosen = provider_of(request.model)
        if own is not None and chosen and chosen not in providers and chosen in own.providers:
            providers[chosen] = _through_gateway(chosen, own.providers[chosen], request.gateway)
        if BEDROCK_ROUTE in (request.gateway or {}):  # Bedrock signed on the host (cli_cloud_routes.py)
            providers[BEDROCK_PROVIDER] = through_gateway("pi", (own.providers if own else {}).get(BEDROCK_PROVIDER),
                                                          request.gateway[BEDROCK_ROUTE])
        write_json(self.home / "models.json", {"providers": providers})

    def command(self, request: AgentRequest) -> CommandSpec:
        self._dirs.use(Path(request.cwd))
        own = self.user_config(Path(request.cwd))
        if not request.model and own.model:  # gtd runs pi with its own agent dir: pass the person's default
            request = replace(request, model=own.model)
        self.prepare(request, own)
        tools = ["--tools", ",".join(TOOLS)] if request.tools else ["--no-tools"]
        argv = [self.executable_path() or self.executable, "-p", "--mode", "json", *tools,
                "--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes"]
        if request.model:
            argv += ["--model", request.model]
        env = {"PI_CODING_AGENT_DIR": str(self.home), "PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1"}
        if not request.tools:  # one-shot, no session kept, under this system prompt alone
            argv += ["--no-session", "--system-prompt", request.system_prompt or ""]
            return CommandSpec(argv=argv, env=env, stdin_data=request.prompt.encode())
        if request.system_prompt:
            argv += ["--append-system-prompt", request.system_prompt]
        argv += ["--session-dir", str(self.sessions_dir)]
        if request.resume_session:
            argv += ["--session", request.resume_session]
        # The prompt goes on stdin (pi reads piped stdin as the message): no argv length limit.
        return CommandSpec(argv=argv, env=env, stdin_data=request.prompt.encode())

    def parse_line(self, line: str) -> list[AgentEvent]:
        data = json_object(line)
        if data is None:
            return []
        kind = data.get("type")
        if kind == "session":
            return [AgentEvent(EventKind.START, session_id=data.get("id"), tools=list(TOOLS), raw=data)]
        if kind == "tool_execution_start":
            args = data.get("args") if isinstance(data.get("args"), dict) else {}
            return [AgentEvent(EventKind.TOOL_CALL, tool=data.get("toolName"), tool_input=args,
                               tool_id=data.get("toolCallId"), raw=data)]
        if kind == "tool_execution_end":
            return [AgentEvent(EventKind.TOOL_RESULT, tool=data.get("toolName"), tool_id=data.get("toolCallId"),
                               text=_result_text(data.get("result")), is_error=bool(data.get("isError")), raw=data)]
        if kind == "message_end":
            message = data.get("message") or {}
            if message.get("role") != "assistant":
                return []
            events = []
            text = "".join(c.get("text", "") for c in message.get("content") or []
                           if isinstance(c, dict) and c.get("type") == "text")
            if text:
                events.append(AgentEvent(EventKind.TEXT, text=text, model=message.get("model"), raw=data))
            if message.get("stopReason") in ("error", "aborted"):
                events.append(AgentEvent(EventKind.ERROR, text=message.get("errorMessage") or message["stopReason"],
                                         is_error=True, raw=data))
            return events
        if kind == "auto_retry_start":
            return [AgentEvent(EventKind.RETRY, raw=data, text=(
                f"API error ({_one_line(data.get('errorMessage') or 'no detail')}), retrying "
                f"(attempt {data.get('attempt', '?')} of {data.get('maxAttempts', '?')})"))]
        if kind == "agent_end":
            usage, cost = _usage(data.get("messages") or [])
            return [AgentEvent(EventKind.END, usage=usage, cost_usd=cost, raw=data)]
        return []

    def outcome(self, exit_code: int, events: list[AgentEvent]) -> AgentOutcome:
        session_id = next((e.session_id for e in events if e.session_id), None)
        # Retries can fail and then succeed: only an error in the *last* assistant message counts.
        last = next((e for e in reversed(events) if e.kind in (EventKind.TEXT, EventKind.ERROR, EventKind.TOOL_CALL)),
                    None)
        if last is not None and last.kind == EventKind.ERROR:
            return AgentOutcome(False, f"pi reported an API error: {last.text}", session_id)
        if exit_code != 0:
            return AgentOutcome(False, f"pi exited with status {exit_code}", session_id)
        if not any(e.kind == EventKind.END for e in events):
            return AgentOutcome(False, "pi finished without ending the agent loop", session_id)
        return AgentOutcome(True, None, session_id)


def _result_text(result) -> str:
    if isinstance(result, dict):
        content = result.get("content")
        if isinstance(content, list):
            return "\n".join(c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text")
    if isinstance(result, str):
        return result
    return json.dumps(result) if result is not None else ""


def _usage(messages: list) -> tuple[dict | None, float | None]:
    total: dict[str, float] = {}
    cost = 0.0
    for m in messages:
        usage = m.get("usage") if isinstance(m, dict) else None
        if not isinstance(usage, dict):
            continue
        for key in ("input", "output", "cacheRead", "cacheWrite", "totalTokens"):
            if isinstance(usage.get(key), (int, float)):
                total[key] = total.get(key, 0) + usage[key]
        c = usage.get("cost")
        if isinstance(c, dict) and isinstance(c.get("total"), (int, float)):
            cost += c["total"]
    return (total or None), (cost if total else None)


def _providers(model: str | None, gateway: dict[str, str] | None = None) -> dict:
    """Custom endpoints from ANTHROPIC_BASE_URL / OPENAI_BASE_URL, with the requested model declared. With gtd's
    credential gateway (`gateway`: route -> base URL inside the sandbox), every provider behind it points there."""
    gateway = gateway or {}
    provider_id, _, model_id = (model or "").partition("/")
    out: dict = {}
    if openai_base_url():
        out[OPENAI_COMPATIBLE] = {
            "baseUrl": gateway.get("openai") or openai_base_url(),
            "api": "openai-completions",
            "apiKey": "OPENAI_API_KEY",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": model_id}] if provider_id == OPENAI_COMPATIBLE and model_id else [],
        }
    elif "openai" in gateway:
        out["openai"] = {"baseUrl": gateway["openai"]}
    base = gateway.get("anthropic") or anthropic_base_url()
    if base:
        entry: dict = {"baseUrl": strip_v1(base)}
        if provider_id == "anthropic" and model_id:
            entry.update(api="anthropic-messages", apiKey="ANTHROPIC_API_KEY", models=[{"id": model_id}])
        out["anthropic"] = entry
    for route in gateway:  # every built-in provider behind it, chosen or only holding a key
        if route in BUILT_IN:
            out[route] = {"baseUrl": gateway[route]}
    return out


def _through_gateway(provider: str, entry: dict, gateway: dict[str, str] | None) -> dict:
    """The person's own provider definition, pointed at the gateway when it is behind it: its base URL the
    gateway's, its key the placeholder under the variable gtd gives it (never the key their config holds)."""
    if not gateway or provider not in gateway:
        return entry
    out = {**entry, "baseUrl": gateway[provider]}
    if entry.get("apiKey"):
        out["apiKey"] = user_key_var(provider)
    return out


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
