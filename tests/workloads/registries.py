"""Local package registries the workload tests start on loopback: a PEP 503 simple index for pip/uv
(a wheel, and an sdist built by pip through a PEP 517 backend shipped inside it) and an npm registry
(packuments + tarballs made with `npm pack`). Nothing here reaches the internet.

Inside the sandbox the tests name the registry `registry.test` (a test resolver maps it to 127.0.0.1,
as DNS would for a real registry); outside they use 127.0.0.1. The servers build every URL from the
request's Host header, so both spellings work, and answer with `Cache-Control: max-age` so a client's
HTTP cache can serve a later offline install.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import tarfile
import threading
import zipfile
from pathlib import Path

REGISTRY_HOST = "registry.test"


GREET_JAVA = 'package gtd;\npublic class Greet { public static String hello(String n) { return "hello " + n; } }\n'


def resolver(host: str, port: int) -> list[str]:
    """Test DNS for the sandbox's proxy: the registry's name points at the loopback server."""
    if host == REGISTRY_HOST:
        return ["127.0.0.1"]
    raise OSError(f"no such host {host}")


# -- Python packages -------------------------------------------------------------------------

def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_wheel(directory: Path, name: str, version: str, module_source: str) -> Path:
    """A pure-Python wheel holding one module `<name>.py`."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": module_source.encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: gtd-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "\n".join([_record_line(k, v) for k, v in files.items()] + [f"{dist}/RECORD,,"]) + "\n"
    path = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for k, v in files.items():
            zf.writestr(k, v)
        zf.writestr(f"{dist}/RECORD", record)
    return path


# A PEP 517 backend small enough to ship inside the sdist: pip builds the wheel in an isolated
# environment without downloading setuptools (the tests have no internet).
_BACKEND = '''
import base64, hashlib, zipfile
NAME, VERSION = {name!r}, {version!r}

def get_requires_for_build_wheel(config_settings=None):
    return []

def _line(name, data):
    d = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{{name}},sha256={{d}},{{len(data)}}"

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    dist = f"{{NAME}}-{{VERSION}}.dist-info"
    files = {{
        f"{{NAME}}.py": open(f"{{NAME}}.py", "rb").read(),
        f"{{dist}}/METADATA": f"Metadata-Version: 2.1\\nName: {{NAME}}\\nVersion: {{VERSION}}\\n".encode(),
        f"{{dist}}/WHEEL": b"Wheel-Version: 1.0\\nGenerator: sdist-backend\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
    }}
    record = "\\n".join([_line(k, v) for k, v in files.items()] + [f"{{dist}}/RECORD,,"]) + "\\n"
    name = f"{{NAME}}-{{VERSION}}-py3-none-any.whl"
    with zipfile.ZipFile(f"{{wheel_directory}}/{{name}}", "w") as zf:
        for k, v in files.items():
            zf.writestr(k, v)
        zf.writestr(f"{{dist}}/RECORD", record)
    return name
'''


def make_sdist(directory: Path, name: str, version: str, module_source: str) -> Path:
    """A source distribution whose wheel pip must build (PEP 517, in-tree backend)."""
    base = f"{name}-{version}"
    files = {
        "pyproject.toml": f'[build-system]\nrequires = []\nbuild-backend = "sdist_backend"\nbackend-path = ["."]\n\n'
                          f'[project]\nname = "{name}"\nversion = "{version}"\n',
        "sdist_backend.py": _BACKEND.format(name=name, version=version),
        f"{name}.py": module_source,
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    }
    path = directory / f"{base}.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for k, v in files.items():
            data = v.encode()
            info = tarfile.TarInfo(f"{base}/{k}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


class _Handler(http.server.BaseHTTPRequestHandler):
    root: Path
    npm_packages: dict[str, dict[str, Path]]
    authorizations: list  # the Authorization header of every request (None when absent)
    required: dict  # {"authorization": "Bearer T"}: every other request is answered 401, as a private registry does

    def log_message(self, *args):
        pass

    def _send(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "public, max-age=3600")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):  # noqa: N802 - uv asks for a wheel's size first
        self.do_GET()

    def do_GET(self):  # noqa: N802
        self.authorizations.append(self.headers.get("Authorization"))
        if self.required.get("authorization") and self.headers.get("Authorization") != self.required["authorization"]:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Bearer realm="registry.test"')
            self.send_header("Content-Length", "0")
            return self.end_headers()
        base = f"http://{self.headers.get('Host')}"
        path = self.path.split("?", 1)[0]
        parts = [p for p in path.split("/") if p]
        if parts[:1] == ["simple"] and len(parts) == 2:  # PEP 503 project page
            links = [f'<a href="{base}/files/{f.name}#sha256={hashlib.sha256(f.read_bytes()).hexdigest()}">{f.name}</a>'
                     for f in sorted((self.root / "files").glob("*"))
                     if f.name.replace("_", "-").lower().startswith(parts[1].lower() + "-")]
            if links:
                return self._send(("<html><body>" + "<br>".join(links) + "</body></html>").encode(), "text/html")
        if parts[:1] == ["files"] and len(parts) == 2 and (self.root / "files" / parts[1]).is_file():
            return self._send((self.root / "files" / parts[1]).read_bytes(), "application/octet-stream")
        if len(parts) == 1 and parts[0] in self.npm_packages:  # npm packument
            return self._send(json.dumps(self._packument(base, parts[0])).encode(), "application/json")
        if len(parts) == 3 and parts[1] == "-" and parts[0] in self.npm_packages:
            for tarball in self.npm_packages[parts[0]].values():
                if tarball.name == parts[2]:
                    return self._send(tarball.read_bytes(), "application/octet-stream")
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _packument(self, base: str, name: str) -> dict:
        versions = {}
        for version, tarball in self.npm_packages[name].items():
            data = tarball.read_bytes()
            with tarfile.open(tarball) as tf:
                manifest = json.load(tf.extractfile("package/package.json"))
            versions[version] = {
                "name": name, "version": version, "dependencies": manifest.get("dependencies", {}),
                "dist": {"tarball": f"{base}/{name}/-/{tarball.name}", "shasum": hashlib.sha1(data).hexdigest(),
                         "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()},
            }
        latest = sorted(versions)[-1]
        return {"name": name, "dist-tags": {"latest": latest}, "versions": versions}


class LocalRegistry:
    """One loopback HTTP server that is both a simple index (/simple, /files) and an npm registry."""

    def __init__(self, root: Path):
        self.root = root
        (root / "files").mkdir(parents=True, exist_ok=True)
        self.npm: dict[str, dict[str, Path]] = {}
        self.authorizations: list = []
        self.required: dict = {}
        handler = type("Handler", (_Handler,), {"root": root, "npm_packages": self.npm,
                                                "authorizations": self.authorizations, "required": self.required})
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}"

    def require_token(self, token: str) -> None:
        """Answer 401 to every request without `Authorization: Bearer <token>` (a private registry)."""
        self.required["authorization"] = f"Bearer {token}"

    def add_wheel(self, name: str, version: str, source: str) -> Path:
        return make_wheel(self.root / "files", name, version, source)

    def add_sdist(self, name: str, version: str, source: str) -> Path:
        return make_sdist(self.root / "files", name, version, source)

    def add_npm_package(self, name: str, version: str, index_js: str, dependencies: dict | None = None) -> Path:
        """A package packed with the real `npm pack`."""
        src = self.root / "npm-src" / f"{name}-{version}"
        src.mkdir(parents=True)
        (src / "package.json").write_text(json.dumps({"name": name, "version": version, "main": "index.js",
                                                      "dependencies": dependencies or {}}))
        (src / "index.js").write_text(index_js)
        out = self.root / "npm-tarballs"
        out.mkdir(exist_ok=True)
        done = subprocess.run(["npm", "pack", "--pack-destination", str(out), str(src)], capture_output=True,
                              text=True, check=True, env=_npm_env())
        tarball = out / done.stdout.strip().splitlines()[-1]
        self.npm.setdefault(name, {})[version] = tarball
        return tarball

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _npm_env() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if not k.lower().startswith("npm_config_")}


def tree_state(root: Path) -> dict[str, tuple]:
    """Every entry under root with its type, size, mtime and content hash: a cache before/after a run."""
    state: dict[str, tuple] = {}
    if not root.exists():
        return state
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        rel = str(path.relative_to(root))
        if path.is_symlink():
            state[rel] = ("link", str(path.readlink()))
        elif path.is_file():
            state[rel] = ("file", st.st_size, st.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
        else:
            state[rel] = ("dir", st.st_mtime_ns)
    return state


def npm_available() -> bool:
    return shutil.which("npm") is not None


# -- Go modules, cargo crates, Maven artifacts: static file layouts ---------------------------

class FileRegistry:
    """A loopback HTTP server for registries that are plain file layouts: a GOPROXY, a cargo sparse
    registry, a Maven repository. `generated` maps a URL path to a function of the base URL
    (http://<Host header>) for the few files that must name the server itself (cargo's config.json)."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.generated: dict[str, object] = {}
        self.requests: list[str] = []
        self.fallbacks: list[Path] = []
        registry = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(root), **kwargs)

            def log_message(self, *args):
                pass

            def translate_path(self, path):
                own = super().translate_path(path)
                for other in registry.fallbacks:
                    if not os.path.exists(own):
                        candidate = other / os.path.relpath(own, root)
                        if candidate.is_file():
                            return str(candidate)
                return own

            def do_GET(self):  # noqa: N802
                path = self.path.split("?", 1)[0]
                registry.requests.append(path)
                make = registry.generated.get(path)
                if make is None:
                    return super().do_GET()
                body = make(f"http://{self.headers.get('Host')}")
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- GOPROXY protocol: <module>/@v/list, <version>.info, .mod, .zip
    def add_go_module(self, module: str, version: str, files: dict[str, str]) -> None:
        base = self.root / module / "@v"
        base.mkdir(parents=True, exist_ok=True)
        go_mod = files.get("go.mod", f"module {module}\n\ngo 1.18\n")
        (base / "list").write_text(version + "\n")
        (base / f"{version}.info").write_text(json.dumps({"Version": version, "Time": "2024-01-01T00:00:00Z"}))
        (base / f"{version}.mod").write_text(go_mod)
        with zipfile.ZipFile(base / f"{version}.zip", "w") as zf:
            for name, text in {**files, "go.mod": go_mod}.items():
                zf.writestr(f"{module}@{version}/{name}", text)

    # -- cargo sparse registry: config.json, index/<prefix>/<name>, dl/<name>/<version>/download
    def add_crate(self, name: str, version: str, lib_rs: str) -> None:
        self.generated["/index/config.json"] = lambda base: json.dumps({"dl": f"{base}/dl"}).encode()
        base = f"{name}-{version}"
        files = {"Cargo.toml": f'[package]\nname = "{name}"\nversion = "{version}"\nedition = "2018"\n',
                 "src/lib.rs": lib_rs}
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
            for path, text in files.items():
                data = text.encode()
                info = tarfile.TarInfo(f"{base}/{path}")
                info.size, info.mode = len(data), 0o644
                tf.addfile(info, io.BytesIO(data))
        crate = buffer.getvalue()
        download = self.root / "dl" / name / version / "download"
        download.parent.mkdir(parents=True, exist_ok=True)
        download.write_bytes(crate)
        lower = name.lower()
        prefix = {1: "1", 2: "2", 3: f"3/{lower[0]}"}.get(len(lower), f"{lower[:2]}/{lower[2:4]}")
        entry = self.root / "index" / prefix / lower
        entry.parent.mkdir(parents=True, exist_ok=True)
        entry.write_text(json.dumps({"name": name, "vers": version, "deps": [], "features": {}, "yanked": False,
                                     "cksum": hashlib.sha256(crate).hexdigest()}) + "\n")

    # -- Maven repository layout: group/path/artifact/version/artifact-version.{pom,jar}(.sha1)
    def add_maven_artifact(self, group: str, artifact: str, version: str, jar: Path) -> None:
        base = self.root / group.replace(".", "/") / artifact / version
        base.mkdir(parents=True, exist_ok=True)
        pom = (f'<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
               f"<groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{version}</version></project>\n")
        for suffix, data in ((".pom", pom.encode()), (".jar", jar.read_bytes())):
            path = base / f"{artifact}-{version}{suffix}"
            path.write_bytes(data)
            path.with_name(path.name + ".sha1").write_text(hashlib.sha1(data).hexdigest())

    def add_greet_artifact(self, scratch: Path) -> None:
        """test.gtd:greet:1.0, a one-class jar compiled here (the Maven and Gradle workloads' dependency)."""
        source = scratch / "gtd" / "Greet.java"
        source.parent.mkdir(parents=True)
        source.write_text(GREET_JAVA)
        subprocess.run(["javac", "-d", str(scratch / "classes"), str(source)], check=True)
        subprocess.run(["jar", "cf", str(scratch / "greet.jar"), "-C", str(scratch / "classes"), "."], check=True)
        self.add_maven_artifact("test.gtd", "greet", "1.0", scratch / "greet.jar")

    def also_serve(self, directory: Path) -> None:
        """Serve a directory's files too, where the registry's own root has none (Debian's Maven plugins)."""
        self.fallbacks.append(directory)
