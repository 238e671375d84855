"""Bedrock's and Vertex's credentials in the real sandbox (providers/cloud_credentials.py,
sandbox/policy/credential_files.py): when the chosen provider is Bedrock or Vertex and the CLI signs itself
(opencode, pi; claude when the host cannot sign: tests/providers/test_cloud_routes.py), its variables are passed
and its credential files are readable and not writable, while the rest of the hidden dir stays hidden; claude
signed for on the host gets none of them;
for any other provider neither variables nor files reach the sandbox. Files are resolved on the host:
a link into another secret or the workspace is refused, and `gtd sandbox explain` says where each came from."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.providers.claude import ClaudeProvider
from gtd.providers.opencode import OpencodeProvider
from gtd.providers.pi import PiProvider
from gtd.sandbox.policy.sandbox_policy import build_policy
from sandbox_support import requires_bwrap, sh
from support import run_gtd

AWS_ENV = {"AWS_PROFILE": "dev", "AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIATEST",
           "AWS_SECRET_ACCESS_KEY": "aws-secret", "AWS_SESSION_TOKEN": "aws-session",
           "AWS_BEARER_TOKEN_BEDROCK": "bedrock-key"}
VERTEX_ENV = {"CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "proj-1", "GOOGLE_CLOUD_PROJECT": "proj-1"}
# The cloud variables inside (AWS_CA_BUNDLE is TLS trust, passed for every provider: session.py).
SHOW_ENV = "env | grep -E '^(AWS|CLAUDE_CODE_USE|CLOUD_ML|ANTHROPIC_VERTEX|GOOGLE)_' | grep -v '^AWS_CA_BUNDLE='"


def _clear_cloud_env(monkeypatch) -> None:
    for var in (*AWS_ENV, *VERTEX_ENV, "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "AWS_CONFIG_FILE",
                "AWS_SHARED_CREDENTIALS_FILE", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "OPENCODE_CONFIG",
                "PI_CODING_AGENT_DIR", "ANTHROPIC_BASE_URL", "ANTHROPIC_BEDROCK_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def aws_home(home, monkeypatch):
    """A HOME with AWS files (an SSO profile), an unrelated AWS CLI cache and an ssh key; AWS variables set."""
    _clear_cloud_env(monkeypatch)
    aws = home / ".aws"
    (aws / "sso" / "cache").mkdir(parents=True)
    (aws / "cli" / "cache").mkdir(parents=True)
    (aws / "config").write_text("[profile dev]\nsso_session = corp\nregion = eu-west-1\n")
    (aws / "credentials").write_text("[default]\naws_access_key_id = AKIAFILE\n")
    (aws / "sso" / "cache" / "token.json").write_text('{"accessToken": "SSO-TOKEN"}')
    (aws / "cli" / "cache" / "role.json").write_text("CLI-CACHE-SECRET")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    for key, value in AWS_ENV.items():
        monkeypatch.setenv(key, value)
    return home


def _provider(cli: str, home: Path, model: str | None):
    """The real provider, its state under HOME; for opencode and pi `model` is gtd's models.build."""
    if cli == "claude":
        return ClaudeProvider(config_dir=home / ".gtd-claude")
    provider = OpencodeProvider(home=home / ".gtd-opencode") if cli == "opencode" else PiProvider(home=home / ".gtd-pi")
    provider.models = {"build": model}
    return provider


BEDROCK_CHOICES = [("opencode", "amazon-bedrock/anthropic.claude-sonnet-4"),
                   ("pi", "amazon-bedrock/anthropic.claude-sonnet-4")]


def _without_a_route(monkeypatch) -> None:
    """A host where gtd cannot sign for Bedrock: no Bedrock API key, and no botocore (gtd's cloud extra)."""
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    monkeypatch.setitem(sys.modules, "botocore.session", None)  # `import botocore.session` fails


def _signing_in_the_cli(home: Path, monkeypatch):
    """pi on Bedrock where gtd cannot sign on the host: its SDK signs in the CLI, so the AWS credentials are
    passed in (signed on the host whenever it can: cli_cloud_routes.py, cloud_routes.py)."""
    _without_a_route(monkeypatch)
    return _provider("pi", home, "amazon-bedrock/anthropic.claude-sonnet-4")


@requires_bwrap
@pytest.mark.bwrap
def test_claude_on_bedrock_signed_on_the_host_gets_no_aws_credential_inside(sandbox, repo, aws_home, monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_USE_BEDROCK", "1")
    needs = ClaudeProvider(config_dir=aws_home / ".gtd-claude").sandbox_needs(repo)
    assert [r.name for r in needs.model_routes] == ["bedrock"] and needs.credential_files == {}
    s = sandbox(Level.READWRITE, needs=needs)
    r = sh(s, f"cat {aws_home}/.aws/config {aws_home}/.aws/credentials {aws_home}/.aws/sso/cache/token.json", repo)
    assert "sso_session" not in r.out and "AKIAFILE" not in r.out and "SSO-TOKEN" not in r.out
    env = dict(line.split("=", 1) for line in sh(s, SHOW_ENV, repo).out.splitlines())
    assert env.pop("AWS_BEARER_TOKEN_BEDROCK").startswith("gtd-placeholder-")
    assert env == {"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "eu-west-1"}


@requires_bwrap
@pytest.mark.bwrap
@pytest.mark.parametrize("cli,model", BEDROCK_CHOICES)
@pytest.mark.parametrize("key", [True, False], ids=["bedrock-api-key", "aws-keys"])
def test_opencode_and_pi_on_bedrock_signed_on_the_host_get_no_aws_credential_inside(cli, model, key, sandbox, repo,
                                                                                    aws_home, monkeypatch):
    if not key:  # SigV4 from the keys in the environment (a profile named would make botocore skip them)
        monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK")
        monkeypatch.delenv("AWS_PROFILE")
    needs = _provider(cli, aws_home, model).sandbox_needs(repo)
    route = next(r for r in needs.model_routes if r.name == "bedrock")
    assert route.upstream == "https://bedrock-runtime.eu-west-1.amazonaws.com" and not needs.gateway_gaps
    assert needs.credential_files == {}
    s = sandbox(Level.READWRITE, needs=needs)
    r = sh(s, f"cat {aws_home}/.aws/config {aws_home}/.aws/credentials {aws_home}/.aws/sso/cache/token.json", repo)
    assert "sso_session" not in r.out and "AKIAFILE" not in r.out and "SSO-TOKEN" not in r.out
    env = dict(line.split("=", 1) for line in sh(s, SHOW_ENV, repo).out.splitlines())
    assert env.pop("AWS_BEARER_TOKEN_BEDROCK").startswith("gtd-placeholder-")
    assert env == {"AWS_REGION": "eu-west-1", **({"AWS_BEDROCK_FORCE_HTTP1": "1"} if cli == "pi" else {})}


@requires_bwrap
@pytest.mark.bwrap
@pytest.mark.parametrize("cli,model", BEDROCK_CHOICES)
def test_bedrock_credentials_are_readable_never_writable_and_the_rest_stays_hidden(cli, model, sandbox, repo,
                                                                                    aws_home, monkeypatch):
    for key, value in VERTEX_ENV.items():  # Vertex's variables are not Bedrock's: they stay out
        monkeypatch.setenv(key, value)
    _without_a_route(monkeypatch)
    needs = _provider(cli, aws_home, model).sandbox_needs(repo)
    assert "bedrock-runtime.eu-west-1.amazonaws.com:443" in needs.model_hosts
    assert "needs botocore" in needs.gateway_gaps["Bedrock"] and "bedrock" not in [r.name for r in needs.model_routes]
    s = sandbox(Level.READWRITE, needs=needs)
    aws = aws_home / ".aws"
    r = sh(s, f"cat {aws}/config {aws}/credentials {aws}/sso/cache/token.json", repo)
    assert r.returncode == 0, r.err
    assert "sso_session = corp" in r.out and "AKIAFILE" in r.out and "SSO-TOKEN" in r.out
    for target in (aws / "config", aws / "credentials", aws / "sso/cache/token.json"):
        w = sh(s, f"echo planted >> {target} || echo REFUSED; rm -f {target} || echo REFUSED", repo)
        assert w.out.split() == ["REFUSED", "REFUSED"], (target, w.out, w.err)
    w = sh(s, f"echo x > {aws}/sso/cache/new.json || echo REFUSED; echo x > {aws}/new || echo REFUSED", repo)
    assert w.out.split() == ["REFUSED", "REFUSED"], w.err
    hidden = sh(s, f"cat {aws}/cli/cache/role.json {aws_home}/.ssh/id_ed25519; ls -A {aws}", repo)
    assert "CLI-CACHE-SECRET" not in hidden.out and "PRIVATE" not in hidden.out
    assert hidden.out.split() == ["config", "credentials", "sso"]
    env = sorted(sh(s, SHOW_ENV, repo).out.splitlines())
    expected = [f"{k}={v}" for k, v in AWS_ENV.items() if k != "AWS_BEARER_TOKEN_BEDROCK"]
    assert env == sorted(expected)
    assert (aws / "config").read_text() == "[profile dev]\nsso_session = corp\nregion = eu-west-1\n"
    assert sorted(p.name for p in (aws / "sso/cache").iterdir()) == ["token.json"]


@requires_bwrap
@pytest.mark.bwrap
@pytest.mark.parametrize("cli,model", [("claude", None), ("opencode", "anthropic/claude-sonnet-4"),
                                       ("pi", "openai/gpt-5")])
def test_another_provider_gets_no_cloud_variables_and_no_cloud_files(cli, model, sandbox, repo, aws_home, monkeypatch):
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(aws_home / "sa.json"))
    (aws_home / "sa.json").write_text("SA-KEY")
    (aws_home / ".config/gcloud").mkdir(parents=True)
    (aws_home / ".config/gcloud/application_default_credentials.json").write_text("ADC-SECRET")
    monkeypatch.setenv("CLAUDE_CODE_USE_BEDROCK", "0")
    needs = _provider(cli, aws_home, model).sandbox_needs(repo)
    assert not needs.credential_files
    s = sandbox(Level.NETWORK, needs=needs)
    r = sh(s, f"cat {aws_home}/.aws/config {aws_home}/.aws/credentials "
              f"{aws_home}/.config/gcloud/application_default_credentials.json; ls -A {aws_home}/.aws", repo)
    assert "sso_session" not in r.out and "AKIAFILE" not in r.out and "ADC-SECRET" not in r.out and r.out == ""
    assert sh(s, SHOW_ENV, repo).out == ""


@requires_bwrap
@pytest.mark.bwrap
@pytest.mark.parametrize("cli,model", [("claude", None), ("opencode", "google-vertex-anthropic/claude-sonnet-4"),
                                       ("pi", "google-vertex/gemini-2.5-pro")])
def test_vertex_credentials_named_outside_home_and_gcloud_adc_are_readable_only(cli, model, sandbox, repo, home,
                                                                                tmp_path, monkeypatch):
    _clear_cloud_env(monkeypatch)
    keys = tmp_path / "keys"  # under the host's /tmp: invisible in the sandbox's private /tmp unless bound
    keys.mkdir()
    (keys / "sa.json").write_text('{"type": "service_account", "private_key": "SA-KEY"}')
    gcloud = home / ".config/gcloud"
    gcloud.mkdir(parents=True)
    (gcloud / "application_default_credentials.json").write_text('{"refresh_token": "ADC-TOKEN"}')
    (gcloud / "credentials.db").write_text("GCLOUD-DB-SECRET")
    for key, value in VERTEX_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(keys / "sa.json"))
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")  # Bedrock's: stays out
    if cli == "claude":
        monkeypatch.setenv("CLAUDE_CODE_USE_VERTEX", "1")
    needs = _provider(cli, home, model).sandbox_needs(repo)
    s = sandbox(Level.READONLY, needs=needs)
    r = sh(s, 'cat "$GOOGLE_APPLICATION_CREDENTIALS"; '
              f"cat {gcloud}/application_default_credentials.json; cat {gcloud}/credentials.db", repo)
    assert "SA-KEY" in r.out and "ADC-TOKEN" in r.out and "GCLOUD-DB-SECRET" not in r.out, r.err
    assert sh(s, f"ls -A {gcloud}", repo).out.split() == ["application_default_credentials.json"]  # nothing else
    w = sh(s, f"echo x >> {keys}/sa.json || echo REFUSED; echo x >> {gcloud}/application_default_credentials.json "
              "|| echo REFUSED", repo)
    assert w.out.split() == ["REFUSED", "REFUSED"], w.err
    env = sorted(sh(s, SHOW_ENV, repo).out.splitlines())
    assert f"GOOGLE_APPLICATION_CREDENTIALS={keys / 'sa.json'}" in env and "GOOGLE_CLOUD_PROJECT=proj-1" in env
    assert "CLOUD_ML_REGION=us-east5" in env and "ANTHROPIC_VERTEX_PROJECT_ID=proj-1" in env
    assert not [line for line in env if line.startswith("AWS_")]
    if cli == "claude":
        assert "us-east5-aiplatform.googleapis.com:443" in needs.model_hosts
    assert (keys / "sa.json").read_text() == '{"type": "service_account", "private_key": "SA-KEY"}'


@requires_bwrap
@pytest.mark.bwrap
def test_a_credential_path_linking_into_another_secret_or_the_workspace_is_not_followed(sandbox, repo, aws_home,
                                                                                         monkeypatch):
    """~/.aws/credentials planted as a link to the ssh key, and GOOGLE_APPLICATION_CREDENTIALS naming a
    workspace symlink to it: neither is mounted, and the key stays unreadable."""
    (aws_home / ".aws/credentials").unlink()
    (aws_home / ".aws/credentials").symlink_to(aws_home / ".ssh/id_ed25519")
    (repo / "sa.json").symlink_to(aws_home / ".ssh/id_ed25519")
    needs = _signing_in_the_cli(aws_home, monkeypatch).sandbox_needs(repo)
    needs.credential_files[repo / "sa.json"] = "Vertex's $GOOGLE_APPLICATION_CREDENTIALS, chosen by a test"
    s = sandbox(Level.READWRITE, needs=needs)
    refused = {str(r.path): r.reason for r in s.policy.refused_credentials}
    assert refused == {str(aws_home / ".aws/credentials"): f"resolves to {aws_home}/.ssh/id_ed25519, inside "
                                                          f"{aws_home}/.ssh, which stays hidden",
                       str(repo / "sa.json"): "inside the workspace: visible as it is there, not mounted (a symlink "
                                              "there is not followed)"}
    r = sh(s, f"cat {aws_home}/.aws/credentials; cat sa.json; cat {aws_home}/.aws/config", repo)
    assert "PRIVATE" not in r.out and "sso_session = corp" in r.out


def test_a_credential_file_that_resolves_into_the_workspace_is_refused(repo, aws_home, monkeypatch):
    (repo / "aws-config").write_text("[default]\ncredential_process = ./steal\n")
    (aws_home / ".aws/config").unlink()
    (aws_home / ".aws/config").symlink_to(repo / "aws-config")
    needs = _signing_in_the_cli(aws_home, monkeypatch).sandbox_needs(repo)
    policy = build_policy(GtdConfig(), workspace=repo, level=Level.READWRITE, needs=needs, home=aws_home)
    assert [(r.path, r.reason) for r in policy.refused_credentials] == [
        (aws_home / ".aws/config", "resolves into the workspace, which the agent can write")]
    assert aws_home / ".aws/config" not in [c.target for c in policy.credential_files]


def test_the_sso_cache_is_passed_only_for_a_profile_that_signs_in_with_sso(repo, aws_home, monkeypatch):
    provider = _signing_in_the_cli(aws_home, monkeypatch)
    assert aws_home / ".aws/sso/cache" in provider.sandbox_needs(repo).credential_files
    monkeypatch.setenv("AWS_PROFILE", "default")  # [default] has no sso_session
    assert aws_home / ".aws/sso/cache" not in provider.sandbox_needs(repo).credential_files


@pytest.mark.parametrize("where", ["AWS_CONFIG_FILE", "link"])
def test_an_aws_config_in_the_workspace_does_not_bring_the_sso_cache(repo, aws_home, monkeypatch, where):
    # The SSO token cache is mounted for a profile that signs in with SSO. An AWS config the agent can write (a
    # relative AWS_CONFIG_FILE, a ~/.aws/config linked into the workspace) decided it: the agent added an
    # sso_session and had the person's SSO tokens mounted in its next sandbox.
    monkeypatch.setenv("AWS_PROFILE", "planted")
    (repo / "aws-config").write_text("[profile planted]\nsso_session = corp\n")
    if where == "link":
        (aws_home / ".aws/config").unlink()
        (aws_home / ".aws/config").symlink_to(repo / "aws-config")
    else:
        monkeypatch.chdir(repo)
        monkeypatch.setenv("AWS_CONFIG_FILE", "aws-config")
    provider = _signing_in_the_cli(aws_home, monkeypatch)
    assert aws_home / ".aws/sso/cache" not in provider.sandbox_needs(repo).credential_files
    (aws_home / ".aws/config").unlink()
    (aws_home / ".aws/config").write_text("[profile planted]\nsso_session = corp\n")  # the person's own: honoured
    monkeypatch.delenv("AWS_CONFIG_FILE", raising=False)
    assert aws_home / ".aws/sso/cache" in provider.sandbox_needs(repo).credential_files


def test_explain_names_where_the_cloud_variables_and_files_came_from(repo, aws_home, monkeypatch):
    from gtd import paths

    if shutil.which("claude") is None or shutil.which("pi") is None:
        pytest.skip("claude or pi is not installed (scripts/install-agents): explain shows no provider's needs without it")
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "claude"}))
    out = run_gtd("sandbox", "explain", "--phase", "build", cwd=repo, env={"CLAUDE_CODE_USE_BEDROCK": "1"})
    assert out.returncode == 0, out.stderr
    # claude: signed for on the host; the route is listed, and no AWS credential or file is passed.
    assert ("  http://127.0.0.1:3129/bedrock -> https://bedrock-runtime.eu-west-1.amazonaws.com "
            "(AWS_BEARER_TOKEN_BEDROCK; claude: CLAUDE_CODE_USE_BEDROCK=1)\n") in out.stdout
    assert "AWS_SECRET_ACCESS_KEY" not in out.stdout and "credential files" not in out.stdout
    # pi on Bedrock: signed for on the host too (cli_cloud_routes.py), no AWS credential or file passed.
    (repo / ".gtdrc.json").write_text("{}")
    paths.user_config_dir().mkdir(parents=True, exist_ok=True)
    (paths.user_config_dir() / "config.json").write_text(json.dumps(
        {"provider": "pi", "models": {"build": "amazon-bedrock/anthropic.claude-sonnet-4"}}))
    out = run_gtd("sandbox", "explain", "--phase", "build", cwd=repo)
    assert out.returncode == 0, out.stderr
    assert ("  http://127.0.0.1:3129/bedrock -> https://bedrock-runtime.eu-west-1.amazonaws.com "
            "(AWS_BEARER_TOKEN_BEDROCK; pi: gtd config models.build = amazon-bedrock/anthropic.claude-sonnet-4)\n"
            ) in out.stdout, out.stdout
    assert "AWS_SECRET_ACCESS_KEY" not in out.stdout and "credential files" not in out.stdout
    # pi on Vertex signs in the CLI: its variables and files are passed, each with where it came from.
    (aws_home / "sa.json").write_text('{"type": "service_account"}')
    (paths.user_config_dir() / "config.json").write_text(json.dumps(
        {"provider": "pi", "models": {"build": "google-vertex/gemini-2.5-pro"}}))
    out = run_gtd("sandbox", "explain", "--phase", "build", cwd=repo,
                  env={"GOOGLE_APPLICATION_CREDENTIALS": str(aws_home / "sa.json"), "GOOGLE_CLOUD_PROJECT": "proj-1"})
    assert out.returncode == 0, out.stderr
    assert "  GOOGLE_CLOUD_PROJECT (from Vertex, " in out.stdout, out.stdout
    assert "credential files (read-only, never writable):\n" in out.stdout
    assert f"  {aws_home}/sa.json (from Vertex's $GOOGLE_APPLICATION_CREDENTIALS, " in out.stdout
    assert "  us-central1-aiplatform.googleapis.com:443 (from " in out.stdout
    (paths.user_config_dir() / "config.json").write_text(json.dumps(
        {"provider": "pi", "models": {"build": "anthropic/claude-sonnet-4"}}))
    plain = run_gtd("sandbox", "explain", "--phase", "build", cwd=repo)
    assert "AWS_" not in plain.stdout and "credential files" not in plain.stdout


def test_the_macos_profile_lets_the_credential_files_be_read_and_never_written(repo, aws_home, monkeypatch):
    from gtd.sandbox.macos.seatbelt import macos_path, render_profile

    needs = _signing_in_the_cli(aws_home, monkeypatch).sandbox_needs(repo)
    policy = build_policy(GtdConfig(), workspace=repo, level=Level.READWRITE, needs=needs, home=aws_home)
    profile = render_profile(policy, proxy_port=3128)
    config = f'(subpath "{macos_path(aws_home / ".aws/config")}")'
    blocks = profile.split("\n(")  # each rule: "allow file-read*\n  (subpath ...)\n)"
    hide = next(i for i, b in enumerate(blocks) if b.startswith("deny file-read*"))
    read = next(i for i, b in enumerate(blocks) if b.startswith("allow file-read*") and config in b)
    write = next(i for i, b in enumerate(blocks) if b.startswith("deny file-write*") and config in b)
    assert f'(subpath "{macos_path(aws_home / ".aws")}")' in blocks[hide]
    assert hide < read < write  # later rules win: readable over the hidden dir, and never writable


def test_a_credential_file_in_a_writable_path_is_refused(repo, home, tmp_path, monkeypatch):
    """The agent could swap a file it can write for a link to a secret before a later command's mount."""
    _clear_cloud_env(monkeypatch)
    keys = home / "keys"
    keys.mkdir()
    (keys / "sa.json").write_text("SA-KEY")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(keys / "sa.json"))
    monkeypatch.setenv("CLAUDE_CODE_USE_VERTEX", "1")
    needs = ClaudeProvider(config_dir=home / ".gtd-claude").sandbox_needs(repo)
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readwrite": {"writablePaths": ["~/keys"]}}}})
    policy = build_policy(config, workspace=repo, level=Level.READWRITE, needs=needs, home=home)
    assert [(r.path, r.reason) for r in policy.refused_credentials] == [
        (keys / "sa.json", f"inside the writable path {keys}: the agent could replace it")]
    readonly = build_policy(config, workspace=repo, level=Level.READONLY, needs=needs, home=home)
    assert [c.source for c in readonly.credential_files] == [keys / "sa.json"]


def test_why_says_a_credential_file_is_readable_and_never_writable(repo, aws_home, monkeypatch):
    from gtd.sandbox.diagnose.why import why_path

    needs = _signing_in_the_cli(aws_home, monkeypatch).sandbox_needs(repo)
    policy = build_policy(GtdConfig(), workspace=repo, level=Level.READWRITE, needs=needs, home=aws_home)
    verdict = why_path(policy, aws_home / ".aws/credentials")
    assert not verdict.allowed and "readable inside the sandbox, never writable" in verdict.reason
    assert "Bedrock's AWS credentials, chosen by " in verdict.reason
    assert "hidden" in why_path(policy, aws_home / ".aws/cli/cache/role.json").reason


def test_claude_on_vertex_reaches_each_region_it_is_told_to_use(repo, home, monkeypatch):
    _clear_cloud_env(monkeypatch)
    monkeypatch.setenv("CLAUDE_CODE_USE_VERTEX", "1")
    monkeypatch.setenv("CLOUD_ML_REGION", "global")
    monkeypatch.setenv("VERTEX_REGION_CLAUDE_4_5_SONNET", "europe-west1")
    hosts = ClaudeProvider(config_dir=home / ".gtd-claude").sandbox_needs(repo).model_hosts
    assert hosts == ["api.anthropic.com:443", "aiplatform.googleapis.com:443", "oauth2.googleapis.com:443",
                     "europe-west1-aiplatform.googleapis.com:443"]
