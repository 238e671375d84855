"""Amazon Bedrock's and Google Vertex AI's credentials, for a run whose chosen model provider is one of them.

These providers authenticate with the person's cloud identity (AWS's or Google's credential chain),
not with an API key of their own. The sandbox hides those secrets (`~/.aws`, `~/.config/gcloud`)
and passes no cloud variables by default; when -- and only when -- the chosen provider is Bedrock or
Vertex, the provider adds what that chain reads:

- Bedrock: the AWS variables (profile, region, keys, session token, Bedrock API key) and claude's
  Bedrock switches; `~/.aws/config` and `~/.aws/credentials` (or the files AWS_CONFIG_FILE and
  AWS_SHARED_CREDENTIALS_FILE name) read-only; `~/.aws/sso/cache` read-only only when the profile
  in use signs in through IAM Identity Center (SSO), whose cached token the SDK must read. Nothing
  else of `~/.aws` (the CLI's own caches, other tools' files), and never writable: an expired SSO
  token is renewed with `aws sso login` outside gtd.
- Vertex: the Google project/region variables and claude's Vertex switches; the file
  GOOGLE_APPLICATION_CREDENTIALS names and gcloud's `application_default_credentials.json`, read-only.

Only when gtd cannot sign on the host (cloud_routes.py for claude, cli_cloud_routes.py for opencode's and
pi's Bedrock; never for their Vertex). Which files are really mounted, after resolving them on the host, is decided by
sandbox/policy/credential_files.py. Chosen: claude by CLAUDE_CODE_USE_BEDROCK / CLAUDE_CODE_USE_VERTEX in
gtd's environment; opencode and pi by the chosen model's provider (`amazon-bedrock/...`,
`google-vertex/...`, `google-vertex-anthropic/...`).
"""

from __future__ import annotations

import os
from pathlib import Path

from gtd.record import field, record

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Iterable, Mapping

BEDROCK = "Bedrock"
VERTEX = "Vertex"
BEDROCK_ENV = ("AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
               "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
               "CLAUDE_CODE_USE_BEDROCK", "ANTHROPIC_BEDROCK_BASE_URL", "CLAUDE_CODE_SKIP_BEDROCK_AUTH")
VERTEX_ENV = ("CLAUDE_CODE_USE_VERTEX", "CLOUD_ML_REGION", "ANTHROPIC_VERTEX_PROJECT_ID", "ANTHROPIC_VERTEX_BASE_URL",
              "CLAUDE_CODE_SKIP_VERTEX_AUTH", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT",
              "GCLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "VERTEX_LOCATION", "GOOGLE_VERTEX_PROJECT",
              "GOOGLE_VERTEX_LOCATION")
VERTEX_ENV_PREFIX = "VERTEX_REGION_CLAUDE_"  # claude's per-model region overrides
CLI_PROVIDERS = {"amazon-bedrock": BEDROCK, "google-vertex": VERTEX, "google-vertex-anthropic": VERTEX}
MAX_AWS_CONFIG_BYTES = 256 * 1024


@record
class CloudCredentials:
    """What one chosen cloud provider needs inside the sandbox, and why (for `gtd sandbox explain`)."""

    env: dict[str, str] = field(default_factory=dict)  # variable name -> why it is passed
    files: dict[Path, str] = field(default_factory=dict)  # file (or the SSO cache dir) -> why it is readable


def truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def claude_cloud(environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """(BEDROCK or VERTEX, why) when claude is switched to a cloud provider in gtd's environment."""
    environ = os.environ if environ is None else environ
    for var, kind in (("CLAUDE_CODE_USE_BEDROCK", BEDROCK), ("CLAUDE_CODE_USE_VERTEX", VERTEX)):
        if truthy(environ.get(var)):
            return kind, f"claude: {var}={environ[var]}"
    return None


def claude_cloud_hosts(kind: str, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The API hosts claude calls on Bedrock or Vertex: its base URL variable's host, else the region's."""
    from gtd.providers.cli_models import regional_hosts, url_rule

    environ = os.environ if environ is None else environ
    base = environ.get("ANTHROPIC_BEDROCK_BASE_URL" if kind == BEDROCK else "ANTHROPIC_VERTEX_BASE_URL")
    if base:
        rule = url_rule(base, environ)
        return (rule,) if rule else ()
    if kind == BEDROCK:
        return regional_hosts("amazon-bedrock", {}, environ)
    # CLOUD_ML_REGION, and the region of each model claude is told to call elsewhere (VERTEX_REGION_CLAUDE_*).
    regions = [r for r in (environ.get("CLOUD_ML_REGION"), *(v for k, v in sorted(environ.items())
                                                             if k.startswith(VERTEX_ENV_PREFIX))) if r]
    if not regions:
        return regional_hosts("google-vertex", {}, environ)
    hosts: dict[str, None] = {}
    for region in regions:
        hosts.update(dict.fromkeys(regional_hosts("google-vertex", {"options": {"location": region}}, environ)))
    return tuple(hosts)


def chosen_clouds(chosen: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """(BEDROCK or VERTEX, why) for each chosen opencode/pi model (model, where chosen) on a cloud provider."""
    from gtd.providers.cli_models import provider_of

    found: dict[str, str] = {}
    for model, where in chosen:
        kind = CLI_PROVIDERS.get(provider_of(model) or "")
        if kind is not None and kind not in found:
            found[kind] = where
    return list(found.items())


def add_chosen_clouds(needs, chosen: Iterable[tuple[str, str]], environ: Mapping[str, str] | None = None,
                      workspace: Path | None = None):
    """`needs` (a SandboxNeeds) with the credentials of every cloud provider among the chosen
    opencode/pi models (model, where chosen) added; nothing for any other provider."""
    environ = os.environ if environ is None else environ
    home = Path(environ.get("HOME") or Path.home())
    for kind, why in chosen_clouds(chosen):
        needs.add_cloud(cloud_credentials(kind, why, home, environ, workspace))
        needs.gateway_gaps[kind] = ("opencode's and pi's Vertex SDKs mint Google tokens in the CLI from your "
                                    "credential files: only claude's Vertex requests are signed on the host"
                                    if kind == VERTEX else "opencode and pi sign Bedrock requests in the CLI")
    return needs


def cloud_credentials(kind: str, why: str, home: Path, environ: Mapping[str, str] | None = None,
                      workspace: Path | None = None) -> CloudCredentials:
    """The variables and files `kind` (BEDROCK or VERTEX) reads, each with `why` it was chosen. An AWS config
    in `workspace`, or reached through a link there, is the agent's: it does not decide about the SSO cache."""
    environ = os.environ if environ is None else environ
    chosen = f"chosen by {why}"
    found = CloudCredentials()
    if kind == BEDROCK:
        found.env = {name: f"{BEDROCK}, {chosen}" for name in BEDROCK_ENV}
        config, credentials = aws_files(environ, home)
        named = {var: f" ${var}" if var in environ else "" for var in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")}
        found.files[config] = f"{BEDROCK}'s AWS config{named['AWS_CONFIG_FILE']}, {chosen}"
        found.files[credentials] = f"{BEDROCK}'s AWS credentials{named['AWS_SHARED_CREDENTIALS_FILE']}, {chosen}"
        profile = environ.get("AWS_PROFILE") or "default"
        if _uses_sso(config, profile, workspace):
            found.files[home / ".aws" / "sso" / "cache"] = (f"{BEDROCK}'s SSO token cache (profile {profile} signs in "
                                                            f"with SSO), {chosen}")
    elif kind == VERTEX:
        found.env = {name: f"{VERTEX}, {chosen}" for name in VERTEX_ENV}
        found.env.update({name: f"{VERTEX}, {chosen}" for name in environ if name.startswith(VERTEX_ENV_PREFIX)})
        named_file, adc = google_files(environ, home)
        if named_file is not None:
            found.files[named_file] = f"{VERTEX}'s $GOOGLE_APPLICATION_CREDENTIALS, {chosen}"
        found.files.setdefault(adc, f"{VERTEX}'s gcloud application default credentials, {chosen}")
    return found


def aws_files(environ: Mapping[str, str], home: Path) -> tuple[Path, Path]:
    """(the AWS config file, the AWS credentials file) as the AWS SDKs find them: the variable's, else ~/.aws's."""
    return (_path(environ.get("AWS_CONFIG_FILE"), home) or home / ".aws" / "config",
            _path(environ.get("AWS_SHARED_CREDENTIALS_FILE"), home) or home / ".aws" / "credentials")


def google_files(environ: Mapping[str, str], home: Path) -> tuple[Path | None, Path]:
    """(the file GOOGLE_APPLICATION_CREDENTIALS names, or None; gcloud's application-default credentials)."""
    gcloud = _path(environ.get("CLOUDSDK_CONFIG"), home) or home / ".config" / "gcloud"
    return _path(environ.get("GOOGLE_APPLICATION_CREDENTIALS"), home), gcloud / "application_default_credentials.json"


def _path(value: str | None, home: Path) -> Path | None:
    """A path a variable names ("~" is the person's HOME); relative paths stay relative (the
    sandbox side decides, and a relative one points into the workspace, where nothing is mounted)."""
    if not value or not value.strip():
        return None
    text = value.strip()
    if text == "~" or text.startswith("~/"):
        return home / text[2:]
    return Path(text)


def _uses_sso(config: Path, profile: str, workspace: Path | None = None) -> bool:
    """Whether `profile` in the AWS config file signs in through IAM Identity Center (sso_session or
    sso_start_url): only then is the SSO token cache needed. Unreadable or garbage, or the agent's (in the
    workspace: a relative AWS_CONFIG_FILE, a ~/.aws/config linked there): no, or it could have the person's
    SSO tokens mounted for it."""
    import configparser

    from gtd.workspace_files import read_metadata_text

    text = read_metadata_text(config, limit=MAX_AWS_CONFIG_BYTES, untrusted=workspace)
    if text is None:
        return False
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return False
    section = "default" if profile == "default" else f"profile {profile}"
    if not parser.has_section(section):
        return False
    return parser.has_option(section, "sso_session") or parser.has_option(section, "sso_start_url")
