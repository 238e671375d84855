"""The configuration schema: the single source of truth for keys, types and defaults.

Keys are camelCase on disk (`testRetries`), snake_case in Python. `gtd config schema`
emits the JSON Schema generated from these models.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator
from pydantic.alias_generators import to_camel

from gtd.config.defaults import DEFAULT_DENY_READ, DEFAULT_INTERCEPT_PORTS, DEFAULT_NETWORK_DOMAINS  # noqa: F401 - re-exported
from gtd.config.levels import Level, Phase  # noqa: F401 - re-exported: the enums live apart so the CLI parses them without pydantic


class ConfigModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        use_enum_values=False,
        validate_default=True,
    )


class LevelRules(ConfigModel):
    """Extra rules for one level. A level also gets the rules of every level below it."""

    writable_paths: list[str] = Field(default_factory=list, description="Extra writable paths (relative to the repo, absolute, or ~).")
    deny_read_paths: list[str] = Field(default_factory=list, description="Paths the agent may not read.")
    allow_domains: list[str] = Field(
        default_factory=list, description="Domains the agent may reach: `host`, `*.host`, optionally `:port`."
    )
    deny_domains: list[str] = Field(default_factory=list, description="Domains always refused (deny wins over allow).")
    host_loopback_ports: list[Annotated[int, Field(ge=1, le=65535)]] = Field(
        default_factory=list,
        description="Ports of services on the host's own loopback (a local database, a dev server) that commands reach "
        "at 127.0.0.1:PORT inside the sandbox. Inside, loopback is otherwise the sandbox's own.",
    )


class LevelsRules(ConfigModel):
    readonly: LevelRules = Field(default_factory=lambda: LevelRules(deny_read_paths=list(DEFAULT_DENY_READ)))
    readwrite: LevelRules = Field(default_factory=LevelRules)
    network: LevelRules = Field(default_factory=lambda: LevelRules(allow_domains=list(DEFAULT_NETWORK_DOMAINS)))
    full: LevelRules = Field(default_factory=LevelRules)

    def for_level(self, level: Level) -> LevelRules:
        return getattr(self, level.value)


class PhaseLevels(ConfigModel):
    """The boundary level each phase runs at."""

    plan: Level = Level.READONLY
    build: Level = Level.READWRITE
    learn: Level = Level.READONLY

    def for_phase(self, phase: Phase) -> Level:
        return getattr(self, phase.value)


class ResourceLimitsConfig(ConfigModel):
    """What one sandboxed command (the agent, a test run) may use at most. Far above a real build."""

    processes: int = Field(8192, ge=0, description="Processes and threads at once (cgroup pids.max, else RLIMIT_NPROC); 0 = no limit.")
    memory: str | int = Field(
        "80%", description="Memory: `8G`, `512M`, `80%` of RAM, or bytes (cgroup memory limit, else RLIMIT_DATA per process); `none` or 0 = no limit."
    )

    @field_validator("memory")
    @classmethod
    def _memory_size(cls, value):
        from gtd.config.memory_size import parse_memory

        parse_memory(value)  # raises ValueError with the accepted spellings
        return value
_HOST_NAME = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"


class ReviewerConfig(ConfigModel):
    """The reviewer model that settles escalations under `sandbox.escalationPolicy: auto` (docs/reviewer.md)."""

    rules: list[Annotated[str, StringConstraints(min_length=1, max_length=2000)]] = Field(
        default_factory=list,
        description="Natural-language lines the reviewer applies to each request (e.g. `allow the npm and PyPI "
                    "registries`). From your user config or a trusted project file only.")


class SandboxConfig(ConfigModel):
    enabled: bool = Field(True, description="Run every agent and test command in the OS sandbox. If it cannot start, gtd stops.")
    backend: Literal["auto", "bwrap", "landlock"] = Field(
        "auto", description="Linux: `bwrap` (namespaces: the strongest), `landlock` (Landlock + seccomp, no namespaces: "
        "for containers and hosts that refuse user namespaces; weaker, see docs/landlock-backend.md) or `auto`: bwrap "
        "where it can create its namespaces, else landlock. From your user config or a trusted project file only.")
    claude_login: Literal["gateway", "inside"] = Field(
        "gateway", description="claude's subscription login: `gateway` keeps it on the host (claude gets a placeholder "
        "login file, gtd's model gateway puts the real token in; docs/credential-gateway.md), `inside` binds your "
        "login read-only into claude's config dir as before, for a claude that will not run on the placeholder.")
    phases: PhaseLevels = Field(default_factory=PhaseLevels)
    levels: LevelsRules = Field(default_factory=LevelsRules)
    limits: ResourceLimitsConfig = Field(default_factory=ResourceLimitsConfig)
    registry_credentials: list[Annotated[str, StringConstraints(pattern=_HOST_NAME, max_length=253)]] = Field(
        default_factory=list,
        description="Registry hosts (exact names, e.g. `npm.example.com`) whose credentials reach the sandbox: the "
                    "user:password in their URLs, their auth lines in ~/.npmrc, their ~/.m2/settings.xml server passwords, "
                    "CARGO_REGISTRIES_<NAME>_TOKEN / UV_INDEX_<NAME>_PASSWORD. Every other credential is left out.")
    pass_env: list[Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=200)]] = Field(
        default_factory=list,
        description="Names of your environment variables that reach every sandboxed command (tests, the agent, "
                    "`gtd sandbox run`), e.g. `NODE_ENV`, `DATABASE_URL`, `JAVA_HOME`. The sandbox otherwise starts "
                    "from a minimal environment so no secret leaks in. gtd's own variables (HOME, proxies) stay gtd's.")
    escalation_policy: Literal["prompt", "auto"] = Field(
        "prompt", description="Who settles a request no saved rule covers: `prompt` asks you (headless: denied, "
        "exit 4); `auto` asks a reviewer model first, which may allow once or deny, never save a rule, grant level "
        "full or override a deny rule; its failure falls back to `prompt` (docs/reviewer.md).")
    reviewer: ReviewerConfig = Field(default_factory=ReviewerConfig)
    read_paths: list[Annotated[str, StringConstraints(min_length=1, max_length=4096)]] = Field(
        default_factory=list,
        description="Paths under your HOME the sandbox may read (read-only), e.g. `~/.config/mytool`. Inside the "
                    "sandbox HOME is hidden except toolchains, package caches and these (`gtd sandbox explain` lists "
                    "them); secret paths (denyReadPaths) stay hidden. In .gtdrc.json it counts once you run `gtd trust`.")
    intercept_ports: list[Annotated[int, Field(ge=1, le=65535)]] = Field(
        default_factory=lambda: list(DEFAULT_INTERCEPT_PORTS),
        description="Ports on which a direct connection (from a client that ignores proxy variables) is caught and "
        "decided by the same rules as the proxy. Inside the sandbox these ports cannot be used for local servers.",
    )


class PhaseModels(ConfigModel):
    """Model per phase, as the provider names it (None = the CLI's default)."""

    plan: str | None = None
    build: str | None = None
    learn: str | None = None

    def for_phase(self, phase: Phase) -> str | None:
        return getattr(self, phase.value)


class Timeouts(ConfigModel):
    inactivity_seconds: int = Field(300, ge=0, description="Stop the agent after this long without any output "
                                    "while no tool call is running (time waiting for your answer never counts). "
                                    "0: off (runSeconds still caps the run).")
    tool_seconds: int = Field(1800, gt=0, description="Stop the agent when one of its tool calls (a build, a test "
                              "run) stays silent this long.")
    run_seconds: int = Field(3600, gt=0, description="Hard cap on one agent run (time waiting for your answer "
                             "never counts).")
    reviewer_seconds: int = Field(60, gt=0, description="How long the reviewer model (escalationPolicy auto) may "
                                  "take for one request; past it, you are asked as under `prompt`.")


ProviderName = Literal["auto", "scripted", "claude", "opencode", "pi"]


class GtdConfig(ConfigModel):
    schema_url: str | None = Field(None, alias="$schema", description="JSON Schema reference for editors.")
    comment: str | list[str] | None = Field(None, alias="$comment", description="Free text for people; ignored by gtd.")
    provider: ProviderName = Field("auto", description="Agent CLI to use; `auto` picks the first installed.")
    models: PhaseModels = Field(default_factory=PhaseModels)
    script: str | None = Field(None, description="Script for the `scripted` provider (path); default: the embedded demo.")
    test_command: str | None = Field(None, description="Shell command run after each build step; non-zero exit = failure.")
    test_timeout_seconds: int = Field(900, gt=0, description="Time limit for one run of the test command; a run that "
                                      "takes longer fails (time waiting for your answer never counts).")
    test_retries: int = Field(3, ge=0, description="Times the agent is re-prompted with test failures per item.")
    plan_retries: int = Field(2, ge=0, description="Times the agent is re-prompted when TODO.md is malformed.")
    max_build_steps: int = Field(50, gt=0, description="Hard cap on build steps in one `gtd build`.")
    items_per_step: int = Field(1, gt=0, description="How many unchecked items one build step hands the agent.")
    baseline_tests: Literal["ask", "stop", "build", "off"] = Field(
        "ask", description="Run the tests once before a plan's first build step. Red: `ask` asks in a terminal and "
        "stops with exit 1 headless (as the original gtd); `stop` always stops with exit 1 before any agent run; "
        "`build` builds on red tests with a warning (`--build-on-red` for one run); `off` skips the run.")
    timeouts: Timeouts = Field(default_factory=Timeouts)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)


# Keys that older versions accepted; accepted and ignored with a warning.
LEGACY_KEYS: dict[str, str] = {
    "agentForbiddenTools": "the forbidden-tools list is internal to gtd and no longer configurable",
}
