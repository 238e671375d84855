"""The person's registry settings: which hosts they name (and where), and what reaches the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.sandbox.policy.sandbox_policy import build_policy
from gtd.sandbox.policy.registries import sanitized_config_files, sanitized_npmrc, strip_credentials, tool_environment, user_registries
from gtd.sandbox.diagnose.why import why_host


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_registries_come_from_every_tools_user_settings_with_their_origin(tmp_path):
    home = tmp_path / "h"
    _write(home / ".config/pip/pip.conf", "[global]\nindex-url = https://u:p@pypi.corp.test/simple\n"
                                          "extra-index-url =\n  https://extra.test/simple\n")
    _write(home / ".config/uv/uv.toml", '[[index]]\nname = "corp"\nurl = "https://uv.corp.test/simple"\n')
    _write(home / ".npmrc", "registry=https://npm.corp.test/\n@acme:registry=http://acme.test:8080/\n"
                            "//npm.corp.test/:_authToken=SECRET\n")
    _write(home / ".yarnrc.yml", 'npmRegistryServer: "https://yarn.corp.test"\n')
    _write(home / ".cargo/config.toml", '[registries.corp]\nindex = "sparse+https://cargo.corp.test/index/"\n')
    env = {"PIP_EXTRA_INDEX_URL": "https://env.test/simple", "GOPROXY": "https://goproxy.test,direct",
           "UV_DEFAULT_INDEX": "https://uvenv.test/simple", "YARN_REGISTRY": "https://yenv.test"}
    found = {r.rule: (r.tool, r.origin) for r in user_registries(home, env)}
    assert found == {
        "env.test:443": ("pip", "PIP_EXTRA_INDEX_URL"),
        "pypi.corp.test:443": ("pip", "~/.config/pip/pip.conf [global] index-url"),
        "extra.test:443": ("pip", "~/.config/pip/pip.conf [global] extra-index-url"),
        "uvenv.test:443": ("uv", "UV_DEFAULT_INDEX"),
        "uv.corp.test:443": ("uv", "~/.config/uv/uv.toml [[index]]"),
        "npm.corp.test:443": ("npm", "~/.npmrc registry"),
        "acme.test:8080": ("npm", "~/.npmrc @acme:registry"),
        "yenv.test:443": ("yarn", "YARN_REGISTRY"),
        "yarn.corp.test:443": ("yarn", "~/.yarnrc.yml npmRegistryServer"),
        "cargo.corp.test:443": ("cargo", "~/.cargo/config.toml [registries.corp] index"),
        "goproxy.test:443": ("go", "GOPROXY"),
    }


def test_registry_hosts_are_allowed_at_network_only_and_a_deny_still_wins(tmp_path, monkeypatch):
    home = tmp_path / "h"
    _write(home / ".npmrc", "registry=https://npm.corp.test/\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    readwrite = build_policy(GtdConfig(), workspace=ws, level=Level.READWRITE, home=home)
    network = build_policy(GtdConfig(), workspace=ws, level=Level.NETWORK, home=home)
    assert not why_host(readwrite, "npm.corp.test").allowed
    verdict = why_host(network, "npm.corp.test")
    assert verdict.allowed and "~/.npmrc registry" in verdict.reason
    denied = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {"denyDomains": ["npm.corp.test"]}}}})
    assert not why_host(build_policy(denied, workspace=ws, level=Level.NETWORK, home=home), "npm.corp.test").allowed


@pytest.mark.parametrize("where", ["venv", "venv link", "relative PIP_CONFIG_FILE", "NPM_CONFIG_USERCONFIG",
                                   "a link of the person's into the workspace"])
def test_a_registry_config_in_the_workspace_opens_no_host(tmp_path, monkeypatch, where):
    """The person's project venv is often activated and inside the workspace: the agent can write
    its pip.conf (or a config a variable names relative to the workspace) between two runs. The
    host it names must not be reachable at network without a prompt; the person's own file is."""
    home, ws = tmp_path / "h", tmp_path / "ws"
    _write(home / ".pip/pip.conf", "[global]\nextra-index-url = https://mine.test/simple\n")
    monkeypatch.chdir(tmp_path)
    for var in ("VIRTUAL_ENV", "PIP_CONFIG_FILE", "NPM_CONFIG_USERCONFIG", "npm_config_userconfig"):
        monkeypatch.delenv(var, raising=False)
    if where == "venv":
        _write(ws / ".venv/pip.conf", "[global]\nindex-url = https://planted.test/simple\n")
        monkeypatch.setenv("VIRTUAL_ENV", str(ws / ".venv"))
    elif where == "venv link":  # to a file outside the workspace the agent wrote (in a writable cache layer)
        _write(tmp_path / "layer/pip.conf", "[global]\nindex-url = https://planted.test/simple\n")
        (ws / ".venv").mkdir(parents=True)
        (ws / ".venv/pip.conf").symlink_to(tmp_path / "layer/pip.conf")
        monkeypatch.setenv("VIRTUAL_ENV", str(ws / ".venv"))
    elif where == "a link of the person's into the workspace":  # ~/.npmrc -> ws/npmrc -> the agent's file
        _write(tmp_path / "layer/npmrc", "registry=https://planted.test/\n")
        ws.mkdir()
        (ws / "npmrc").symlink_to(tmp_path / "layer/npmrc")
        (home / ".npmrc").symlink_to(ws / "npmrc")
    elif where == "NPM_CONFIG_USERCONFIG":
        _write(ws / "npmrc", "registry=https://planted.test/\n")
        monkeypatch.setenv("NPM_CONFIG_USERCONFIG", str(ws / "npmrc"))
    else:
        _write(ws / "pip.conf", "[global]\nindex-url = https://planted.test/simple\n")
        monkeypatch.setenv("PIP_CONFIG_FILE", "ws/pip.conf")
    network = build_policy(GtdConfig(), workspace=ws, level=Level.NETWORK, home=home)
    assert why_host(network, "mine.test").allowed
    assert not why_host(network, "planted.test").allowed
    assert "planted.test:443" not in {r.rule for r in user_registries(home, workspace=ws)}


def test_tool_variables_reach_the_sandbox_without_credentials():
    env = {"PIP_INDEX_URL": "https://me:pw@pypi.corp.test/simple", "PIP_EXTRA_INDEX_URL": "https://a:b@x.test/s https://y.test/s",
           "UV_INDEX_CORP_PASSWORD": "pw", "NPM_CONFIG__AUTHTOKEN": "t", "npm_config_registry": "https://npm.test/",
           "CARGO_REGISTRIES_CORP_TOKEN": "t", "GOPROXY": "https://u:p@goproxy.test", "HOME": "/h", "AWS_SECRET_ACCESS_KEY": "x"}
    assert tool_environment(env) == {"PIP_INDEX_URL": "https://pypi.corp.test/simple",
                                     "PIP_EXTRA_INDEX_URL": "https://x.test/s https://y.test/s",
                                     "npm_config_registry": "https://npm.test/", "GOPROXY": "https://goproxy.test"}
    assert tool_environment(env, ["pypi.corp.test"])["PIP_INDEX_URL"] == "https://me:pw@pypi.corp.test/simple"
    assert strip_credentials("sparse+https://t@cargo.test/index/") == "sparse+https://cargo.test/index/"


def test_npmrc_and_config_files_lose_their_secrets_unless_the_host_is_opted_in(tmp_path):
    home = tmp_path / "h"
    _write(home / ".npmrc", "registry=https://npm.corp.test/\n_authToken=GLOBALSECRET\n//npm.corp.test/:_authToken=SECRET\n"
                            "//other.test/:_password=PW\nstrict-ssl=false\n")
    clean = sanitized_npmrc(home, {})
    assert "SECRET" not in clean and "PW" not in clean
    assert "registry=https://npm.corp.test/" in clean and "strict-ssl=false" in clean
    opted = sanitized_npmrc(home, {}, ["npm.corp.test"])
    assert "//npm.corp.test/:_authToken=SECRET" in opted and "GLOBALSECRET" not in opted and "PW" not in opted
    _write(home / ".yarnrc.yml", 'npmRegistryServer: "https://y.test"\nnpmAuthToken: "YSECRET"\n')
    _write(home / ".config/pip/pip.conf", "[global]\nindex-url = https://me:PIPSECRET@p.test/simple\n")
    _write(home / ".config/uv/uv.toml", 'index-url = "https://uv.test/simple"\n')  # nothing secret: not replaced
    files = {str(p.relative_to(home)): text for p, text in sanitized_config_files(home, {})}
    assert set(files) == {".yarnrc.yml", ".config/pip/pip.conf"}
    assert "YSECRET" not in files[".yarnrc.yml"] and "https://y.test" in files[".yarnrc.yml"]
    assert files[".config/pip/pip.conf"] == "[global]\nindex-url = https://p.test/simple\n"


@pytest.mark.parametrize("host", ["*.corp.test", "https://x.test", "a b", ""])
def test_registry_credentials_must_name_exact_hosts(host):
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        GtdConfig.model_validate({"sandbox": {"registryCredentials": [host]}})


def test_maven_settings_mirrors_are_registries_and_server_passwords_stay_out(tmp_path):
    from gtd.sandbox.policy.registries import sanitized_maven_settings

    home = tmp_path / "h"
    _write(home / ".m2/settings.xml",
           '<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">\n'
           "<servers><server><id>corp</id><username>me</username><password>MVNSECRET</password></server>"
           "<server><id>other</id><privateKey>KEY</privateKey></server></servers>\n"
           "<mirrors><mirror><id>corp</id><mirrorOf>*</mirrorOf><url>https://maven.corp.test/repo</url></mirror></mirrors>\n"
           "<profiles><profile><repositories><repository><id>other</id><url>https://u:p@other.test/m2</url>"
           "</repository></repositories></profile></profiles>\n</settings>\n")
    found = {r.rule: r.origin for r in user_registries(home, {})}
    assert found == {"maven.corp.test:443": "~/.m2/settings.xml mirror corp",
                     "other.test:443": "~/.m2/settings.xml repository other"}
    clean = sanitized_maven_settings(home)
    assert "MVNSECRET" not in clean and "KEY" not in clean and "u:p@" not in clean
    assert "<username>me</username>" in clean and "https://maven.corp.test/repo" in clean
    opted = sanitized_maven_settings(home, ["maven.corp.test"])
    assert "MVNSECRET" in opted and "KEY" not in opted
    _write(home / ".m2/settings.xml", '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><settings>&e;</settings>')
    assert sanitized_maven_settings(home) is None and user_registries(home, {}) == []


def test_credential_variables_pass_only_for_an_opted_in_registry():
    env = {"CARGO_REGISTRIES_CORP_INDEX": "sparse+https://cargo.corp.test/index/", "CARGO_REGISTRIES_CORP_TOKEN": "CT",
           "CARGO_REGISTRIES_OTHER_TOKEN": "OT", "UV_INDEX": "corp-pypi=https://uv.corp.test/simple",
           "UV_INDEX_CORP_PYPI_PASSWORD": "UP", "UV_INDEX_CORP_PYPI_USERNAME": "me", "YARN_NPM_AUTH_TOKEN": "YT"}
    assert set(tool_environment(env)) == {"CARGO_REGISTRIES_CORP_INDEX", "UV_INDEX", "UV_INDEX_CORP_PYPI_USERNAME"}
    opted = tool_environment(env, ["cargo.corp.test", "uv.corp.test"])
    assert opted["CARGO_REGISTRIES_CORP_TOKEN"] == "CT" and opted["UV_INDEX_CORP_PYPI_PASSWORD"] == "UP"
    assert "CARGO_REGISTRIES_OTHER_TOKEN" not in opted and "YARN_NPM_AUTH_TOKEN" not in opted
