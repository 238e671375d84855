"""What an agent CLI needs from the sandbox: its model hosts, state dirs, config it reads, credentials it
is let in with. Each provider (gtd.providers) builds one; the policy (sandbox_policy.py) takes it in."""

from __future__ import annotations

from pathlib import Path

from gtd.record import field, record


@record
class SandboxNeeds:
    """What the provider needs from the sandbox at every level below `full`."""

    model_hosts: list[str] = field(default_factory=list)  # "host:port", reachable at every level
    # Where a model host beyond the CLI's default API came from (shown by `gtd sandbox explain`).
    model_host_origins: dict[str, str] = field(default_factory=dict)
    writable_dirs: list[Path] = field(default_factory=list)  # state dirs: sessions, caches
    protected_paths: list[Path] = field(default_factory=list)  # its config/hook/plugin dirs: read-only
    # What the CLI reads from its gtd-managed dir (the config gtd writes for it): shown read-only in the
    # hidden HOME (sandbox/policy/home_allow.py).
    read_dirs: list[Path] = field(default_factory=list)
    env_passthrough: list[str] = field(default_factory=list)  # credential env var names let in
    # A cloud model provider's (Bedrock, Vertex: providers/cloud_credentials.py) variables and files, with why.
    env_origins: dict[str, str] = field(default_factory=dict)
    credential_files: dict[Path, str] = field(default_factory=dict)  # readable, read-only, inside
    # A login the CLI reads from its gtd-managed config dir although the person's file lives elsewhere
    # (claude's `~/.claude/.credentials.json`): {where the CLI looks: (the person's file, why)}, bound read-only.
    login_files: dict[Path, tuple[Path, str]] = field(default_factory=dict)
    # The model APIs the CLI reaches through gtd's credential gateway (sandbox/network/credential_gateway.py: a
    # GatewayRoute each); their keys reach the CLI only as per-session placeholders.
    model_routes: list = field(default_factory=list)
    # {cloud ("Bedrock", "Vertex"): why its credentials are not behind the gateway} (shown by `gtd doctor`).
    gateway_gaps: dict[str, str] = field(default_factory=dict)

    def add_cloud(self, cloud) -> None:
        """Let in a chosen cloud provider's credentials (a providers.cloud_credentials.CloudCredentials)."""
        self.env_passthrough = list(dict.fromkeys([*self.env_passthrough, *cloud.env]))
        self.env_origins.update(cloud.env)
        self.credential_files.update(cloud.files)
