"""The package managers' user settings the sandbox sees in the hidden HOME: written by gtd, never copied.

A sanitized copy of the person's file leaks whatever the pattern misses (a yarn 1 `_authToken` line, a
yarnrc.yml flow map or block scalar, a Maven `Private-Token` header). So the file is turned around like
HOME itself (home_allow.py): gtd parses the person's file and writes a new one holding only

- registry and mirror URLs, each with its `user:password@` cut out, and
- the settings named in the allow-lists below (retries, timeouts, strict SSL, scoped registries, ...),
  each a plain single-line value.

Anything else, in any form the parser does not know, is not written. A credential reaches the file
only for a host the person opted in with `sandbox.registryCredentials` (their user config, or a project
file after `gtd trust`); every other registry is reached without credentials, and when it asks for
some, gtd's hint names that setting (hints.registry_credential_hints).

Maven's settings.xml is written by maven_settings.py. Cargo's and git's configs by cargo_config.py and
gitconfig.py. Files outside HOME (/etc/pip.conf) are visible as they are: HOME is what is hidden.
"""

from __future__ import annotations

import os
from pathlib import Path

from gtd.sandbox.policy.containment import strictly_inside

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Mapping

HEADER = "written by gtd from your {what}: registry URLs and the settings gtd lists, nothing else (docs/registry-settings.md)"

# pip.conf: any section ([global], [install], [download], ...), these keys only.
PIP_URL_KEYS = ("index-url", "extra-index-url", "find-links")
PIP_KEYS = PIP_URL_KEYS + ("trusted-host", "no-index", "timeout", "default-timeout", "retries", "prefer-binary",
                           "only-binary", "no-binary", "pre", "disable-pip-version-check", "no-input", "progress-bar",
                           "require-virtualenv", "break-system-packages", "no-cache-dir", "no-build-isolation",
                           "use-pep517", "no-color", "quiet", "verbose", "upgrade-strategy", "root-user-action")
# uv.toml: top-level keys (and the same under [pip]); [[index]] entries with these fields.
UV_URL_KEYS = ("index-url", "extra-index-url", "find-links")
UV_KEYS = UV_URL_KEYS + ("no-index", "index-strategy", "native-tls", "offline", "python-preference", "python-downloads",
                         "link-mode", "compile-bytecode", "prerelease", "resolution", "allow-insecure-host",
                         "concurrent-downloads", "no-build-isolation", "exclude-newer")
UV_INDEX_KEYS = ("name", "url", "default", "explicit", "format")
# ~/.npmrc and pnpm's rc: these keys, plus `<@scope>:registry`.
NPM_KEYS = ("registry", "strict-ssl", "fetch-retries", "fetch-retry-factor", "fetch-retry-mintimeout",
            "fetch-retry-maxtimeout", "fetch-timeout", "prefer-offline", "prefer-online", "offline", "audit", "fund",
            "update-notifier", "save-exact", "save-prefix", "engine-strict", "legacy-peer-deps", "package-lock",
            "lockfile-version", "progress", "loglevel", "node-linker", "shamefully-hoist", "auto-install-peers",
            "strict-peer-dependencies", "ignore-scripts", "maxsockets", "color", "unicode", "install-links",
            "resolution-mode", "prefer-dedupe", "cafile")
# npmrc keys that are credentials: written only behind `//host/...:` of an opted-in host.
NPM_CREDENTIAL_KEYS = ("_authtoken", "_auth", "_password", "username", "email", "certfile", "keyfile", "always-auth")
# ~/.yarnrc (yarn 1): these keys, plus `<@scope>:registry`.
YARN1_KEYS = ("registry", "strict-ssl", "network-timeout", "network-concurrency", "cafile", "ignore-engines",
              "disable-self-update-check", "prefer-offline", "child-concurrency", "ignore-scripts", "save-prefix",
              "lastUpdateCheck", "ignore-optional")
# ~/.yarnrc.yml (yarn berry): these keys; npmScopes.<name> with the scope keys only.
YARN_BERRY_URL_KEYS = ("npmRegistryServer", "npmPublishRegistry")
YARN_BERRY_KEYS = YARN_BERRY_URL_KEYS + ("enableStrictSsl", "httpTimeout", "httpRetry", "networkConcurrency",
                                         "enableTelemetry", "enableGlobalCache", "nodeLinker", "enableNetwork",
                                         "enableProgressBars", "enableColors", "enableScripts", "checksumBehavior",
                                         "compressionLevel", "pnpMode", "defaultSemverRangePrefix", "httpsCaFilePath")
YARN_BERRY_LISTS = ("unsafeHttpWhitelist",)
YARN_BERRY_SCOPE_KEYS = YARN_BERRY_URL_KEYS
# Go's env file (`go env -w`): these variables only (never GOAUTH: it runs commands that print credentials).
GO_KEYS = ("GOPROXY", "GONOPROXY", "GOPRIVATE", "GONOSUMDB", "GONOSUMCHECK", "GOSUMDB", "GOINSECURE", "GOFLAGS",
           "GOTOOLCHAIN", "GO111MODULE", "GOTELEMETRY", "CGO_ENABLED", "GOMODCACHE", "GOCACHE", "GOPATH", "GOBIN",
           "GOEXPERIMENT", "GOAMD64", "GOARM64", "GOVCS")
# gradle.properties: these keys (never systemProp.*: proxy passwords; never signing or repository logins).
GRADLE_KEYS = ("org.gradle.caching", "org.gradle.parallel", "org.gradle.daemon", "org.gradle.configureondemand",
               "org.gradle.console", "org.gradle.workers.max", "org.gradle.warning.mode", "org.gradle.logging.level",
               "org.gradle.configuration-cache", "org.gradle.vfs.watch", "org.gradle.java.home",
               "org.gradle.jvmargs", "kotlin.code.style", "kotlin.incremental", "android.useAndroidX")


def _line_safe(value: object) -> bool:
    return isinstance(value, str) and "\n" not in value and "\r" not in value and "\0" not in value


def _scalar(value: object) -> bool:
    return isinstance(value, (bool, int, float)) or _line_safe(value)


# -- each tool -----------------------------------------------------------------------------------

def pip_conf(text: str, hosts: Iterable[str]) -> str | None:
    import configparser

    from gtd.sandbox.policy.registries import strip_credentials

    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    out = [f"# {HEADER.format(what='pip.conf')}"]
    for section in parser.sections():
        if not _line_safe(section) or "]" in section:
            continue
        kept = []
        for key in PIP_KEYS:
            if parser.has_option(section, key):
                values = [v.strip() for v in parser.get(section, key).splitlines() if v.strip()]
                values = [strip_credentials(v, hosts) if key in PIP_URL_KEYS else v for v in values]
                if values and all(_line_safe(v) for v in values):
                    kept.append(f"{key} = {values[0]}" if len(values) == 1 else f"{key} =\n" +
                                "\n".join(f"    {v}" for v in values))
        if kept:
            out += [f"[{section}]", *kept]
    return "\n".join(out) + "\n"


def uv_toml(text: str, hosts: Iterable[str]) -> str | None:
    import tomllib

    from gtd.sandbox.policy.registries import strip_credentials

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None

    def table(source: dict) -> dict:
        kept = {}
        for key in UV_KEYS:
            value = source.get(key)
            if isinstance(value, list) and all(_line_safe(v) for v in value):
                kept[key] = [strip_credentials(v, hosts) if key in UV_URL_KEYS else v for v in value]
            elif _scalar(value):
                kept[key] = strip_credentials(value, hosts) if key in UV_URL_KEYS and isinstance(value, str) else value
        return kept

    out = table(data)
    if isinstance(data.get("pip"), dict) and table(data["pip"]):
        out["pip"] = table(data["pip"])
    indexes = []
    for entry in data.get("index") or []:
        if isinstance(entry, dict) and _line_safe(entry.get("url")):
            kept = {k: entry[k] for k in UV_INDEX_KEYS if _scalar(entry.get(k))}
            kept["url"] = strip_credentials(entry["url"], hosts)
            indexes.append(kept)
    if indexes:
        out["index"] = indexes
    import tomlkit

    return f"# {HEADER.format(what='uv.toml')}\n" + tomlkit.dumps(out)


def _npm_credential_for(key: str, hosts: set[str]) -> bool:
    """`//host[:port]/path/:_authToken` (or another credential key) of an opted-in host."""
    if not key.startswith("//"):
        return False
    scope, _, name = key.rpartition(":")
    host = scope[2:].split("/", 1)[0].rsplit(":", 1)[0].strip("[]").lower()
    return name.lower() in NPM_CREDENTIAL_KEYS and host in hosts


def npmrc(text: str, hosts: Iterable[str]) -> str:
    from gtd.sandbox.policy.registries import strip_credentials

    hosts = {h.lower() for h in hosts}
    out = [f"; {HEADER.format(what='npmrc')}"]
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        key, sep, value = stripped.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not _line_safe(value):
            continue
        if key in NPM_KEYS or (key.startswith("@") and key.endswith(":registry") and "/" not in key):
            out.append(f"{key}={strip_credentials(value, hosts)}")
        elif _npm_credential_for(key, hosts):
            out.append(f"{key}={value}")
    return "\n".join(out) + "\n"


def yarnrc(text: str, hosts: Iterable[str]) -> str:
    """yarn 1's `key value` lines (top level only: an indented line belongs to a nested block, left out)."""
    import shlex

    from gtd.sandbox.policy.registries import strip_credentials

    out = [f"# {HEADER.format(what='~/.yarnrc')}"]
    for line in text.splitlines():
        if not line.strip() or line[0].isspace() or line.lstrip().startswith("#"):
            continue
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        if len(words) != 2 or not all(_line_safe(w) for w in words):
            continue
        key, value = words
        if key in YARN1_KEYS or (key.startswith("@") and key.endswith(":registry") and "/" not in key):
            out.append(f"{_yarn_quote(key)} {_yarn_quote(strip_credentials(value, hosts))}")
    return "\n".join(out) + "\n"


def _yarn_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def yarnrc_yml(text: str, hosts: Iterable[str]) -> str | None:
    import yaml

    from gtd.sandbox.policy.registries import strip_credentials

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict):
        return None

    def pick(source: dict, keys) -> dict:
        kept = {}
        for key in keys:
            value = source.get(key)
            if _scalar(value):
                kept[key] = strip_credentials(value, hosts) if key in YARN_BERRY_URL_KEYS and isinstance(value, str) else value
        return kept

    out = pick(data, YARN_BERRY_KEYS)
    for key in YARN_BERRY_LISTS:
        value = data.get(key)
        if isinstance(value, list) and all(_line_safe(v) for v in value):
            out[key] = list(value)
    scopes = {}
    for name, scope in (data.get("npmScopes") or {}).items() if isinstance(data.get("npmScopes"), dict) else ():
        if _line_safe(name) and isinstance(scope, dict) and pick(scope, YARN_BERRY_SCOPE_KEYS):
            scopes[name] = pick(scope, YARN_BERRY_SCOPE_KEYS)
    if scopes:
        out["npmScopes"] = scopes
    return f"# {HEADER.format(what='~/.yarnrc.yml')}\n" + yaml.safe_dump(out, default_flow_style=False, sort_keys=False)


def go_env(text: str, hosts: Iterable[str]) -> str:
    from gtd.sandbox.policy.registries import strip_credentials

    out = [f"# {HEADER.format(what='Go env file')}"]
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in GO_KEYS and _line_safe(value):
            out.append(f"{key.strip()}={strip_credentials(value.strip(), hosts)}")
    return "\n".join(out) + "\n"


def gradle_properties(text: str, hosts: Iterable[str]) -> str:
    """Only the listed keys; from org.gradle.jvmargs only the JVM's -X options (a -D there can carry a password)."""
    out = [f"# {HEADER.format(what='gradle.properties')}"]
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#!" or stripped.endswith("\\"):
            continue
        key, sep, value = stripped.partition("=")
        if not sep:
            key, sep, value = stripped.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or key not in GRADLE_KEYS or not _line_safe(value):
            continue
        if key == "org.gradle.jvmargs":
            value = " ".join(w for w in value.split() if w.startswith(("-X", "-Dfile.encoding=")))
            if not value:
                continue
        out.append(f"{key}={value}")
    return "\n".join(out) + "\n"


# -- where they are ---------------------------------------------------------------------------------

def candidates(home: Path, environ: Mapping[str, str]) -> list[tuple[Path, str, object]]:
    """(the person's file, what it is, its writer) for every user-level registry settings file gtd knows."""
    from gtd.sandbox.policy import registries as reg
    from gtd.sandbox.policy.maven_settings import maven_settings

    xdg = reg._xdg_config(home, environ)
    env = {k: v for k, v in environ.items() if k != "PIP_CONFIG_FILE"}
    found = [(p, "pip.conf", pip_conf) for p in reg.pip_config_files(home, env)]
    explicit = environ.get("PIP_CONFIG_FILE")
    if explicit and explicit != os.devnull and os.path.isabs(os.path.expanduser(explicit)):
        found.append((Path(os.path.expanduser(explicit)), "pip.conf", pip_conf))
    found.append((xdg / "uv" / "uv.toml", "uv.toml", uv_toml))
    uv_file = environ.get("UV_CONFIG_FILE")
    if uv_file and os.path.isabs(uv_file):
        found.append((Path(uv_file), "uv.toml", uv_toml))
    found += [(home / ".npmrc", "npmrc", npmrc), (xdg / "pnpm" / "rc", "pnpm rc", npmrc),
              (home / ".yarnrc", "~/.yarnrc", yarnrc), (home / ".yarnrc.yml", "~/.yarnrc.yml", yarnrc_yml),
              (reg._go_env_path(home, environ), "Go env file", go_env),
              (Path(environ.get("GRADLE_USER_HOME") or home / ".gradle") / "gradle.properties", "gradle.properties",
               gradle_properties),
              (home / ".m2" / "settings.xml", "Maven settings.xml", maven_settings)]
    return found


def registry_files(home: Path, workspace: Path, credential_hosts: Iterable[str] = (),
                   environ: Mapping[str, str] | None = None) -> list[tuple[Path, str, str]]:
    """(where the tool looks in the hidden HOME, the generated text, why) for each of the person's settings
    files there. ~/.npmrc is written from the file NPM_CONFIG_USERCONFIG names, if any (that variable does
    not reach the sandbox). A file in the workspace, or linked from there, is the agent's: not used."""
    from gtd.sandbox.policy import registries as reg

    environ = os.environ if environ is None else environ
    hosts = tuple(sorted({h.lower() for h in credential_hosts}))
    out: dict[Path, tuple[str, str]] = {}
    for target, what, writer in candidates(home, environ):
        source = reg.npmrc_path(home, environ) if target == home / ".npmrc" else target
        target = Path(os.path.normpath(target))
        if target in out or not strictly_inside(target, home):
            continue
        text = _generated(source, workspace, writer, hosts)
        if text is not None:
            out[target] = (text, f"generated by gtd from your {what}: registry URLs and listed settings only"
                                 + (f" (credentials for {', '.join(hosts)}: sandbox.registryCredentials)" if hosts else ""))
    return [(target, text, why) for target, (text, why) in out.items()]


def _generated(source: Path, workspace: Path, writer, hosts: tuple[str, ...]) -> str | None:
    """writer(text) for the person's file, remembered in gtd's state dir unless it may hold an opted-in
    credential (the state dir can be readable inside the sandbox)."""
    from gtd.sandbox.policy.home_allow import persisted
    from gtd.workspace_files import read_metadata_text

    def compute():
        text = read_metadata_text(source, untrusted=workspace)
        return None if text is None else writer(text, hosts)

    if not os.path.lexists(source):
        return None
    if hosts:
        return compute()
    return persisted(f"registry-{writer.__name__}", [str(source), str(workspace)], [str(source)], compute)
