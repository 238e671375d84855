"""The person's registry settings: which hosts they name (and where), and what reaches the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.sandbox.policy.sandbox_policy import build_policy
from gtd.sandbox.policy.registries import strip_credentials, tool_environment, user_registries
from gtd.sandbox.policy.registry_files import registry_files
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


def _generated(home, ws=None, hosts=()) -> dict[str, str]:
    return {str(p.relative_to(home)): text for p, text, _ in registry_files(home, ws or home.parent / "ws", hosts, {})}


def test_npmrc_is_written_by_gtd_with_urls_and_listed_settings_and_tokens_only_for_opted_in_hosts(tmp_path):
    home = tmp_path / "h"
    _write(home / ".npmrc", "registry=https://npm.corp.test/\n_authToken=GLOBALSECRET\n//npm.corp.test/:_authToken=SECRET\n"
                            "//other.test/:_password=PW\nstrict-ssl=false\nsome-future-key=FUTURESECRET\n"
                            "@acme:registry=https://me:URLSECRET@acme.test/\n")
    clean = _generated(home)[".npmrc"]
    assert "SECRET" not in clean and "PW" not in clean
    assert "registry=https://npm.corp.test/" in clean and "strict-ssl=false" in clean
    assert "@acme:registry=https://acme.test/" in clean
    opted = _generated(home, hosts=["npm.corp.test"])[".npmrc"]
    assert "//npm.corp.test/:_authToken=SECRET" in opted and "GLOBALSECRET" not in opted and "PW" not in opted


def test_every_registry_settings_file_is_generated_even_without_anything_credential_like(tmp_path):
    """The person's file is never shown as it is: a secret in a form no pattern knows stays out too."""
    home = tmp_path / "h"
    _write(home / ".config/uv/uv.toml", 'index-url = "https://uv.test/simple"\nextra-build-dependencies = "LOOKS-HARMLESS"\n')
    _write(home / ".config/pip/pip.conf", "[global]\nindex-url = https://me:PIPSECRET@p.test/simple\nclient-cert = /k.pem\n")
    _write(home / ".config/go/env", "GOPROXY=https://u:GOSECRET@goproxy.test\nGOAUTH=git dir\n")
    _write(home / ".gradle/gradle.properties", "org.gradle.parallel=true\nsystemProp.https.proxyPassword=GRADLESECRET\n"
                                               "org.gradle.jvmargs=-Xmx2g -Djavax.net.ssl.keyStorePassword=JVMSECRET\n")
    files = _generated(home)
    assert set(files) == {".config/uv/uv.toml", ".config/pip/pip.conf", ".config/go/env", ".gradle/gradle.properties"}
    assert 'index-url = "https://uv.test/simple"' in files[".config/uv/uv.toml"] and "LOOKS" not in files[".config/uv/uv.toml"]
    assert files[".config/pip/pip.conf"].splitlines()[1:] == ["[global]", "index-url = https://p.test/simple"]
    assert files[".config/go/env"].splitlines()[1:] == ["GOPROXY=https://goproxy.test"]
    assert files[".gradle/gradle.properties"].splitlines()[1:] == ["org.gradle.parallel=true", "org.gradle.jvmargs=-Xmx2g"]


def test_yarn_settings_leak_no_token_in_any_form(tmp_path):
    """yarn 1 `_authToken` lines (bare, quoted, per registry) and yarnrc.yml flow maps and block scalars:
    the sanitized copies of the last round kept them."""
    home = tmp_path / "h"
    _write(home / ".yarnrc", 'registry "https://yarn.corp.test/"\n_authToken Y1SECRET\n"_authToken" "Y2SECRET"\n'
                             '"//yarn.corp.test/:_authToken" "Y3SECRET"\n  //nested/:_authToken Y4SECRET\n'
                             '"@acme:registry" "https://acme.test/"\n')
    _write(home / ".yarnrc.yml", 'npmRegistryServer: "https://berry.corp.test"\n'
                                 'npmScopes: {acme: {npmRegistryServer: "https://acme.test", npmAuthToken: B1SECRET}}\n'
                                 "npmRegistries:\n  //berry.corp.test:\n    npmAuthIdent: |\n      B2SECRET\n"
                                 "npmAuthToken: >-\n  B3SECRET\n"
                                 "unsafeHttpWhitelist: [localhost]\n")
    files = _generated(home)
    assert "SECRET" not in files[".yarnrc"] + files[".yarnrc.yml"]
    assert files[".yarnrc"].splitlines()[1:] == ['"registry" "https://yarn.corp.test/"', '"@acme:registry" "https://acme.test/"']
    import yaml

    assert yaml.safe_load(files[".yarnrc.yml"]) == {"npmRegistryServer": "https://berry.corp.test",
                                                    "unsafeHttpWhitelist": ["localhost"],
                                                    "npmScopes": {"acme": {"npmRegistryServer": "https://acme.test"}}}


def test_a_settings_file_in_the_workspace_is_not_used(tmp_path):
    home, ws = tmp_path / "h", tmp_path / "ws"
    _write(ws / "npmrc", "registry=https://planted.test/\n")
    home.mkdir()
    (home / ".npmrc").symlink_to(ws / "npmrc")
    assert ".npmrc" not in _generated(home, ws)


@pytest.mark.parametrize("host", ["*.corp.test", "https://x.test", "a b", ""])
def test_registry_credentials_must_name_exact_hosts(host):
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        GtdConfig.model_validate({"sandbox": {"registryCredentials": [host]}})


MAVEN_LEAKY = (
    '<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">\n'
    "<servers><server><id>corp</id><username>me</username><password>MVNSECRET</password></server>"
    "<server><id>other</id><privateKey>KEY</privateKey></server>"
    "<server><id>gitlab</id><configuration><httpHeaders><property><name>Private-Token</name>"
    "<value>GLSECRET</value></property></httpHeaders></configuration></server></servers>\n"
    "<proxies><proxy><id>p</id><host>proxy.corp</host><port>8080</port><username>pu</username>"
    "<password>PROXYSECRET</password></proxy></proxies>\n"
    "<mirrors><mirror><id>corp</id><mirrorOf>*</mirrorOf><url>https://maven.corp.test/repo</url></mirror></mirrors>\n"
    "<profiles><profile><id>ci</id><properties><sonar.login>PROPSECRET</sonar.login></properties>"
    "<repositories><repository><id>other</id><url>https://u:p@other.test/m2</url></repository>"
    "<repository><id>gitlab</id><url>https://gitlab.test/api/v4/packages/maven</url></repository>"
    "</repositories></profile></profiles>\n<activeProfiles><activeProfile>ci</activeProfile></activeProfiles>\n</settings>\n")


def test_maven_settings_are_written_from_mirrors_and_repositories_and_no_secret_survives(tmp_path):
    import xml.etree.ElementTree as ET

    home = tmp_path / "h"
    _write(home / ".m2/settings.xml", MAVEN_LEAKY)
    found = {r.rule: r.origin for r in user_registries(home, {})}
    assert found == {"maven.corp.test:443": "~/.m2/settings.xml mirror corp",
                     "other.test:443": "~/.m2/settings.xml repository other",
                     "gitlab.test:443": "~/.m2/settings.xml repository gitlab"}
    clean = _generated(home)[".m2/settings.xml"]
    for secret in ("MVNSECRET", "KEY", "u:p@", "GLSECRET", "Private-Token", "PROXYSECRET", "proxy.corp", "PROPSECRET"):
        assert secret not in clean
    root = ET.fromstring(clean)
    ns = {"m": "http://maven.apache.org/SETTINGS/1.0.0"}
    assert [e.text for e in root.findall("m:mirrors/m:mirror/m:url", ns)] == ["https://maven.corp.test/repo"]
    assert [e.text for e in root.findall(".//m:repository/m:url", ns)] == ["https://other.test/m2",
                                                                           "https://gitlab.test/api/v4/packages/maven"]
    assert [e.text for e in root.findall("m:activeProfiles/m:activeProfile", ns)] == ["ci"]
    opted = _generated(home, hosts=["gitlab.test"])[".m2/settings.xml"]  # that server as it is; no other
    assert "GLSECRET" in opted and "MVNSECRET" not in opted and "PROXYSECRET" not in opted
    _write(home / ".m2/settings.xml", '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><settings>&e;</settings>')
    assert ".m2/settings.xml" not in _generated(home) and user_registries(home, {}) == []


def test_a_registry_asking_for_credentials_gets_a_hint_naming_the_setting(tmp_path):
    from gtd.sandbox.diagnose.hints import split_hints

    home, ws = tmp_path / "h", tmp_path / "ws"
    ws.mkdir()
    _write(home / ".npmrc", "registry=https://npm.corp.test/\n//npm.corp.test/:_authToken=SECRET\n")
    policy = build_policy(GtdConfig(), workspace=ws, level=Level.NETWORK, home=home)
    output = "npm error code E401\nnpm error Unable to authenticate, need: Basic realm=\"npm.corp.test\"\n"
    told, person = split_hints(output, policy)
    assert told == [] and len(person) == 1
    assert "npm.corp.test" in person[0] and "sandbox.registryCredentials" in person[0] and "~/.npmrc registry" in person[0]
    opted = GtdConfig.model_validate({"sandbox": {"registryCredentials": ["npm.corp.test"]}})
    assert split_hints(output, build_policy(opted, workspace=ws, level=Level.NETWORK, home=home)) == ([], [])
    assert split_hints("npm error code E404 npm.corp.test", policy) == ([], [])


def test_credential_variables_pass_only_for_an_opted_in_registry():
    env = {"CARGO_REGISTRIES_CORP_INDEX": "sparse+https://cargo.corp.test/index/", "CARGO_REGISTRIES_CORP_TOKEN": "CT",
           "CARGO_REGISTRIES_OTHER_TOKEN": "OT", "UV_INDEX": "corp-pypi=https://uv.corp.test/simple",
           "UV_INDEX_CORP_PYPI_PASSWORD": "UP", "UV_INDEX_CORP_PYPI_USERNAME": "me", "YARN_NPM_AUTH_TOKEN": "YT"}
    assert set(tool_environment(env)) == {"CARGO_REGISTRIES_CORP_INDEX", "UV_INDEX", "UV_INDEX_CORP_PYPI_USERNAME"}
    opted = tool_environment(env, ["cargo.corp.test", "uv.corp.test"])
    assert opted["CARGO_REGISTRIES_CORP_TOKEN"] == "CT" and opted["UV_INDEX_CORP_PYPI_PASSWORD"] == "UP"
    assert "CARGO_REGISTRIES_OTHER_TOKEN" not in opted and "YARN_NPM_AUTH_TOKEN" not in opted
