"""The user's own package-registry settings, honoured inside the sandbox with the secrets left out.

Read from the person's environment and *user-level* config files only (pip.conf, uv.toml, ~/.npmrc,
~/.yarnrc(.yml), ~/.cargo/config.toml, GOPROXY and the go env file): those are the person's choice,
so the hosts they name are reachable at level `network` without a prompt. Files inside the workspace
(a project .npmrc, a repository's uv.toml) still reach the tools, which read them directly, but
their hosts are never allowed automatically: a cloned repository must not open the network.

Secrets stay out: ~/.npmrc is hidden (it holds tokens), so the sandbox gets a generated copy with
only the non-secret settings (`NPM_CONFIG_USERCONFIG`); variables whose names carry credentials are
never passed; credentials embedded in registry URLs are stripped. `sandbox.registryCredentials` lists
the hosts whose credentials the person opts in to pass (userinfo in their URLs, their ~/.npmrc auth lines).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from gtd.record import record
from gtd.workspace_files import read_metadata_text

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Iterable, Mapping

# Variables that configure where the package managers download from (values are URLs or host lists).
TOOL_VAR_PREFIXES = ("PIP_", "UV_", "NPM_CONFIG_", "npm_config_", "YARN_", "PNPM_", "CARGO_REGISTRIES_",
                     "CARGO_REGISTRY_", "CARGO_NET_", "CARGO_HTTP_", "RUSTUP_DIST_", "RUSTUP_UPDATE_")
TOOL_VARS = ("GOPROXY", "GONOPROXY", "GOPRIVATE", "GONOSUMDB", "GONOSUMCHECK", "GOSUMDB", "GOINSECURE", "GOFLAGS",
             "GOTOOLCHAIN", "GO111MODULE")
# A variable whose name says it carries a credential is never passed (its value names no host to match).
_SECRET_NAME = re.compile(r"TOKEN|PASSWORD|PASSWD|SECRET|CREDENTIAL|_AUTH|AUTH_|APIKEY|API_KEY|_KEY$|CERT_KEY",
                          re.IGNORECASE)
# npmrc keys that are credentials (bare, or behind a `//host/path/:` prefix).
_NPMRC_SECRET_KEYS = {"_auth", "_authtoken", "_password", "password", "username", "email", "certfile", "keyfile",
                      "cert", "key", "otp"}
_URL = re.compile(r"(?:sparse\+|registry\+|git\+)?https?://[^\s,;|\"']+", re.IGNORECASE)
NPMRC_IN_SANDBOX = "/tmp/.gtd/npmrc"


@record(frozen=True)
class Registry:
    host: str
    port: int
    tool: str  # "pip", "npm", ...
    origin: str  # where it was named: a variable or a file (and key)

    @property
    def rule(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def _host_port(url: str) -> tuple[str, int] | None:
    url = re.sub(r"^(sparse|registry|git)\+", "", url.strip(), flags=re.IGNORECASE)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname.lower().rstrip("."), port or (443 if parts.scheme.lower() == "https" else 80)


def _urls(value: str) -> list[str]:
    return _URL.findall(value or "")


# -- where the settings live -------------------------------------------------------------------

def _xdg_config(home: Path, environ: Mapping[str, str]) -> Path:
    return Path(environ.get("XDG_CONFIG_HOME") or home / ".config")


def _xdg_config_dirs(environ: Mapping[str, str]) -> list[Path]:
    return [Path(p) for p in (environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(os.pathsep) if p]


def pip_config_files(home: Path, environ: Mapping[str, str]) -> list[Path]:
    """pip's config files, lowest priority first (global, user, site, then PIP_CONFIG_FILE)."""
    explicit = environ.get("PIP_CONFIG_FILE")
    if explicit == os.devnull:
        return []  # pip reads no file at all
    files = [d / "pip" / "pip.conf" for d in reversed(_xdg_config_dirs(environ))] + [Path("/etc/pip.conf")]
    files += [home / ".pip" / "pip.conf", _xdg_config(home, environ) / "pip" / "pip.conf"]
    venv = environ.get("VIRTUAL_ENV")
    if venv:
        files.append(Path(venv) / "pip.conf")
    if explicit:
        files.append(Path(explicit).expanduser())
    return files


def npmrc_path(home: Path, environ: Mapping[str, str]) -> Path:
    explicit = environ.get("NPM_CONFIG_USERCONFIG") or environ.get("npm_config_userconfig")
    return Path(explicit).expanduser() if explicit else home / ".npmrc"


def _short(path: Path, home: Path) -> str:
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)


# -- discovery ------------------------------------------------------------------------------

def user_registries(home: Path, environ: Mapping[str, str] | None = None,
                    workspace: Path | None = None) -> list[Registry]:
    """Every registry host the person's own settings name, with where each came from. A file in
    `workspace`, or reached through a link there, is not theirs to trust: the agent can write it (an
    activated project venv's pip.conf, a relative PIP_CONFIG_FILE) and would open a host for the next run."""
    environ = os.environ if environ is None else environ
    found: list[Registry] = []

    def add(tool: str, origin: str, *values: str) -> None:
        for value in values:
            for url in _urls(value):
                hp = _host_port(url)
                if hp and not any(r.host == hp[0] and r.port == hp[1] for r in found):
                    found.append(Registry(hp[0], hp[1], tool, origin))

    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"):
        add("pip", name, environ.get(name, ""))
    for path in pip_config_files(home, environ):
        text = read_metadata_text(path, untrusted=workspace)
        if text is None:
            continue
        import configparser  # here: most sandboxed commands never read a pip.conf

        parser = configparser.RawConfigParser(strict=False)
        try:
            parser.read_string(text)
        except configparser.Error:
            continue
        for section in parser.sections():
            for key in ("index-url", "extra-index-url", "find-links"):
                if parser.has_option(section, key):
                    add("pip", f"{_short(path, home)} [{section}] {key}", parser.get(section, key))

    for name in ("UV_DEFAULT_INDEX", "UV_INDEX", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS"):
        add("uv", name, environ.get(name, ""))
    for path in [d / "uv" / "uv.toml" for d in _xdg_config_dirs(environ)] + [_xdg_config(home, environ) / "uv" / "uv.toml"]:
        data = _toml(path, workspace)
        if data is None:
            continue
        for key in ("index-url", "extra-index-url", "find-links"):
            add("uv", f"{_short(path, home)} {key}", *_strings(data.get(key)))
        for index in data.get("index") or []:
            if isinstance(index, dict):
                add("uv", f"{_short(path, home)} [[index]]", *_strings(index.get("url")))

    for name in ("npm_config_registry", "NPM_CONFIG_REGISTRY"):
        add("npm", name, environ.get(name, ""))
    for key, value in _npmrc_items(npmrc_path(home, environ), workspace):
        if key == "registry" or key.endswith(":registry"):
            add("npm", f"{_short(npmrc_path(home, environ), home)} {key}", value)

    for name in ("YARN_REGISTRY", "YARN_NPM_REGISTRY_SERVER"):
        add("yarn", name, environ.get(name, ""))
    yarnrc = read_metadata_text(home / ".yarnrc", untrusted=workspace)
    for match in re.finditer(r'^\s*"?registry"?\s+"?([^"\s]+)', yarnrc or "", re.MULTILINE):
        add("yarn", "~/.yarnrc registry", match.group(1))
    yarnrc_yml = read_metadata_text(home / ".yarnrc.yml", untrusted=workspace)
    for match in re.finditer(r'^\s*npmRegistryServer:\s*["\']?([^"\'\s]+)', yarnrc_yml or "", re.MULTILINE):
        add("yarn", "~/.yarnrc.yml npmRegistryServer", match.group(1))

    cargo_home = Path(environ.get("CARGO_HOME") or home / ".cargo")
    for name, value in sorted(environ.items()):
        if name.startswith("CARGO_REGISTRIES_") and name.endswith("_INDEX"):
            add("cargo", name, value)
    for path in (cargo_home / "config.toml", cargo_home / "config"):
        data = _toml(path, workspace)
        if data is None:
            continue
        for table in ("registries", "source"):
            for name, entry in (data.get(table) or {}).items():
                if isinstance(entry, dict):
                    for key in ("index", "registry"):
                        add("cargo", f"{_short(path, home)} [{table}.{name}] {key}", *_strings(entry.get(key)))
        break  # cargo reads config.toml, else the legacy `config`

    for url, origin in _maven_urls(home, workspace):
        add("maven", origin, url)

    go_env = _go_env_file(home, environ, workspace)
    for name in ("GOPROXY", "GOSUMDB"):
        value = environ.get(name) or go_env.get(name, "")
        origin = name if environ.get(name) else f"{_short(_go_env_path(home, environ), home)} {name}"
        if name == "GOSUMDB" and value and "://" not in value and value != "off":
            value = "https://" + value.split()[-1].split("+")[0]  # "name+key [url]": the database host
        add("go", origin, value)
    return found


MAVEN_SETTINGS = (".m2", "settings.xml")
_MAVEN_SECRETS = ("password", "privateKey", "passphrase")


def _maven_tree(home: Path, workspace: Path | None = None):
    text = read_metadata_text(home.joinpath(*MAVEN_SETTINGS), untrusted=workspace)
    if text is None or "<!DOCTYPE" in text or "<!ENTITY" in text:  # no entity expansion, ever
        return None
    import xml.etree.ElementTree as ET  # here: only where a settings.xml is there to parse

    try:
        return ET.ElementTree(ET.fromstring(text))
    except ET.ParseError:
        return None


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _maven_urls(home: Path, workspace: Path | None) -> list[tuple[str, str]]:
    """(url, origin) of every mirror and repository in ~/.m2/settings.xml, with the id each has."""
    tree = _maven_tree(home, workspace)
    if tree is None:
        return []
    found = []
    for element in tree.iter():
        if _local(element.tag) in ("mirror", "repository", "pluginRepository"):
            fields = {_local(child.tag): (child.text or "").strip() for child in element}
            if fields.get("url"):
                found.append((fields["url"], f"~/.m2/settings.xml {_local(element.tag)} {fields.get('id', '')}".rstrip()))
    return found


def maven_local_repository(home: Path, workspace: Path | None = None) -> str | None:
    """~/.m2/settings.xml's <localRepository> (Maven's local repository moved elsewhere), as written."""
    tree = _maven_tree(home, workspace)
    if tree is None:
        return None
    for element in tree.getroot():
        if _local(element.tag) == "localRepository" and (element.text or "").strip():
            return element.text.strip()
    return None


def sanitized_maven_settings(home: Path, credential_hosts: Iterable[str] = ()) -> str | None:
    """~/.m2/settings.xml (hidden: it holds server passwords) without its secrets: mirrors, profiles and
    repositories stay; a <server>'s password, private key and passphrase go, unless the server's id is a
    mirror or repository whose host is opted in."""
    tree = _maven_tree(home)
    if tree is None:
        return None
    import xml.etree.ElementTree as ET
    root = tree.getroot()
    namespace = root.tag[1:].split("}", 1)[0] if root.tag.startswith("{") else ""
    if namespace:
        ET.register_namespace("", namespace)
    hosts = {h.lower() for h in credential_hosts}
    opted_ids = set()
    for element in root.iter():
        if _local(element.tag) in ("mirror", "repository", "pluginRepository"):
            fields = {_local(child.tag): (child.text or "").strip() for child in element}
            hp = _host_port(fields.get("url", ""))
            if hp and hp[0] in hosts and fields.get("id"):
                opted_ids.add(fields["id"])
    for server in [e for e in root.iter() if _local(e.tag) == "server"]:
        ids = [(c.text or "").strip() for c in server if _local(c.tag) == "id"]
        if ids and ids[0] in opted_ids:
            continue
        for child in list(server):
            if _local(child.tag) in _MAVEN_SECRETS:
                server.remove(child)
    for element in root.iter():  # credentials embedded in URLs
        if _local(element.tag) == "url" and element.text:
            element.text = strip_credentials(element.text, hosts)
    return ET.tostring(root, encoding="unicode") + "\n"


def _toml(path: Path, workspace: Path | None = None) -> dict | None:
    text = read_metadata_text(path, untrusted=workspace)
    if text is None:
        return None
    import tomllib  # here: most sandboxed commands never read a TOML settings file

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _go_env_path(home: Path, environ: Mapping[str, str]) -> Path:
    return Path(environ.get("GOENV") or _xdg_config(home, environ) / "go" / "env")


def _go_env_file(home: Path, environ: Mapping[str, str], workspace: Path | None = None) -> dict[str, str]:
    out = {}
    for line in (read_metadata_text(_go_env_path(home, environ), untrusted=workspace) or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


# -- what reaches the sandbox -----------------------------------------------------------------

def strip_credentials(value: str, credential_hosts: Iterable[str] = ()) -> str:
    """Every URL in `value` without its user:password@, unless its host is opted in."""
    keep = {h.lower() for h in credential_hosts}

    def clean(match: re.Match) -> str:
        url = match.group(0)
        prefix = re.match(r"^(sparse\+|registry\+|git\+)?", url, re.IGNORECASE).group(0)
        try:
            parts = urlsplit(url[len(prefix):])
            host = parts.hostname
        except ValueError:
            return url
        if "@" not in parts.netloc or (host and host.lower() in keep):
            return url
        return prefix + urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))

    return _URL.sub(clean, value)


def tool_environment(environ: Mapping[str, str] | None = None, credential_hosts: Iterable[str] = ()) -> dict[str, str]:
    """The package managers' own variables, as the sandbox gets them: credential-named ones left out,
    credentials in URLs stripped (except for opted-in hosts)."""
    environ = os.environ if environ is None else environ
    hosts = tuple(credential_hosts)
    out = {}
    for name, value in environ.items():
        if not (name.startswith(TOOL_VAR_PREFIXES) or name in TOOL_VARS):
            continue
        if name.lower() == "npm_config_userconfig":
            continue
        if _SECRET_NAME.search(name) or name.lower() == "npm_config__auth":
            host = _credential_var_host(name, environ)
            if host is None or host not in {h.lower() for h in hosts}:
                continue  # a credential for no opted-in registry
        out[name] = strip_credentials(value, hosts)
    return out


def _credential_var_host(name: str, environ: Mapping[str, str]) -> str | None:
    """The registry host a credential variable belongs to, when its name ties it to one:
    CARGO_REGISTRIES_<NAME>_TOKEN -> CARGO_REGISTRIES_<NAME>_INDEX; UV_INDEX_<NAME>_USERNAME/PASSWORD ->
    the index named <name> in UV_INDEX ("name=url")."""
    cargo = re.fullmatch(r"CARGO_REGISTRIES_(\w+)_TOKEN", name)
    if cargo:
        hp = _host_port(environ.get(f"CARGO_REGISTRIES_{cargo.group(1)}_INDEX", ""))
        return hp[0] if hp else None
    uv = re.fullmatch(r"UV_INDEX_(\w+)_(?:USERNAME|PASSWORD)", name)
    if uv:
        wanted = uv.group(1).lower().replace("_", "-")
        for entry in (environ.get("UV_INDEX") or "").split():
            index_name, sep, url = entry.partition("=")
            if sep and index_name.lower().replace("_", "-") == wanted:
                hp = _host_port(url)
                return hp[0] if hp else None
    return None


def _npmrc_items(path: Path, workspace: Path | None = None) -> list[tuple[str, str]]:
    items = []
    for line in (read_metadata_text(path, untrusted=workspace) or "").splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        key, sep, value = stripped.partition("=")
        if sep:
            items.append((key.strip(), value.strip().strip('"')))
    return items


def _npmrc_secret(key: str, credential_hosts: set[str]) -> bool:
    """`_authToken`, or `//host/path/:_authToken` (kept when its host is opted in)."""
    base = key.rsplit(":", 1)[-1].lower() if key.startswith("//") else key.lower()
    if base not in _NPMRC_SECRET_KEYS:
        return False
    if key.startswith("//"):
        host = key[2:].split("/", 1)[0].split(":", 1)[0].lower()
        return host not in credential_hosts
    return True


def sanitized_npmrc(home: Path, environ: Mapping[str, str] | None = None, credential_hosts: Iterable[str] = ()) -> str | None:
    """The person's ~/.npmrc without its secrets (None when there is none): registries, scopes, and every
    other setting reach npm, pnpm and yarn inside; tokens only for opted-in hosts."""
    environ = os.environ if environ is None else environ
    path = npmrc_path(home, environ)
    if read_metadata_text(path) is None:
        return None
    hosts = {h.lower() for h in credential_hosts}
    lines = [f"; generated by gtd from {_short(path, home)}: credentials left out unless opted in "
             "(sandbox.registryCredentials)"]
    for key, value in _npmrc_items(path):
        if _npmrc_secret(key, hosts) or key.lower() in ("userconfig", "globalconfig"):
            continue
        lines.append(f"{key}={strip_credentials(value, hosts)}")
    return "\n".join(lines) + "\n"


# Keys in user config files whose values are credentials themselves (yarn berry, yarn classic, uv, pip).
# Compiled at first use (~1 ms), by re's cache: most sessions find no such file to clean.
_SECRET_LINE = (r"^\s*[\"']?(npmAuthToken|npmAuthIdent|_authToken|_auth|_password|password|token|"
                r"client-cert|client-key)[\"']?\s*[:=\s]")


def sanitized_config_files(home: Path, environ: Mapping[str, str] | None = None,
                           credential_hosts: Iterable[str] = ()) -> list[tuple[Path, str]]:
    """The person's registry config files that hold credentials, each with a copy that holds none: the
    sandbox sees the copy in its place (pip.conf, uv.toml, ~/.yarnrc, ~/.yarnrc.yml). Files without
    credentials are not listed: the tools read them as they are."""
    environ = os.environ if environ is None else environ
    hosts = {h.lower() for h in credential_hosts}
    # Every user-level file, whether or not the tool reads it now (PIP_CONFIG_FILE=/dev/null): the point
    # is that nothing inside can read the credentials.
    candidates = [p for p in pip_config_files(home, {k: v for k, v in environ.items() if k != "PIP_CONFIG_FILE"})
                  if str(p).startswith(str(home) + "/")]
    explicit = environ.get("PIP_CONFIG_FILE")
    if explicit and explicit != os.devnull and str(Path(explicit).expanduser()).startswith(str(home) + "/"):
        candidates.append(Path(explicit).expanduser())
    candidates += [_xdg_config(home, environ) / "uv" / "uv.toml", home / ".yarnrc", home / ".yarnrc.yml"]
    out = []
    for path in dict.fromkeys(candidates):
        text = read_metadata_text(path)
        if text is None:
            continue
        lines = []
        for line in text.splitlines():
            if re.match(_SECRET_LINE, line, re.IGNORECASE):
                lines.append("# (a credential, left out by gtd)")
            else:
                lines.append(strip_credentials(line, hosts))
        clean = "\n".join(lines) + "\n"
        if clean.rstrip("\n") != text.rstrip("\n"):
            out.append((path, clean))
    return out


def _private_copy(prefix: str, text: str) -> str:
    """`text` in a new file of the host's temporary directory (mode 0600: never visible inside); its path."""
    import tempfile  # here: most sessions find nothing to copy

    fd, path = tempfile.mkstemp(prefix=prefix)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


class ToolSettings:
    """One session's share of the person's registry settings: the tools' variables (secrets left out)
    and the sanitized npmrc, bound read-only at NPMRC_IN_SANDBOX (the real ~/.npmrc stays hidden)."""

    def __init__(self, home: Path, credential_hosts: Iterable[str] = ()):
        self.home = home
        self.credential_hosts = tuple(credential_hosts)
        self._env: dict[str, str] = {}
        self._file: str | None = None
        self._covers: list[tuple[str, str]] = []  # (temp file with the sanitized copy, the real file it covers)

    def start(self, *, bind: bool) -> "ToolSettings":
        self._env = tool_environment(credential_hosts=self.credential_hosts)
        npmrc = sanitized_npmrc(self.home, credential_hosts=self.credential_hosts) if bind else None
        if npmrc is not None:
            self._file = _private_copy("gtd-npmrc-", npmrc)
            self._env["NPM_CONFIG_USERCONFIG"] = NPMRC_IN_SANDBOX
        if bind:
            maven = sanitized_maven_settings(self.home, self.credential_hosts)
            covers = sanitized_config_files(self.home, credential_hosts=self.credential_hosts)
            if maven is not None:
                covers.append((self.home.joinpath(*MAVEN_SETTINGS), maven))
            for path, clean in covers:
                self._covers.append((_private_copy("gtd-config-", clean), os.path.realpath(path)))
        return self

    def environment(self) -> dict[str, str]:
        return dict(self._env)

    def bwrap_args(self) -> list[str]:
        """Mounts after the policy's: the sanitized npmrc, and each sanitized copy over its original."""
        args = ["--ro-bind", self._file, NPMRC_IN_SANDBOX] if self._file else []
        for temp, real in self._covers:
            args += ["--ro-bind", temp, real]
        return args

    def close(self) -> None:
        paths = [self._file] + [temp for temp, _ in self._covers]
        self._file, self._covers = None, []
        for path in paths:
            if path:
                try:
                    os.unlink(path)
                except OSError:
                    pass
