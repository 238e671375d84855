"""Every common network client reaches an allowed host from inside the sandbox, and is refused, with
gtd's message, for a host no rule allows: whether it honours the proxy variables (curl, wget, git,
apt, Python) or not (Node's fetch and http module, Java, ssh).

`registry.test` is mapped to a loopback server the test starts, through the session's resolver hook
(never the internet). The server listens on a random high port, so the config adds that port to
`sandbox.interceptPorts` (the defaults, 22/80/443, need root to listen on outside a sandbox).
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.sandbox.policy.sandbox_policy import build_policy
from gtd.sandbox.session import open_sandbox
from support import stop_listening

pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
    pytest.mark.bwrap,
]

ALLOWED = "registry.test"
REFUSED = "other.test"
PAYLOAD = b"PACKAGE-CONTENTS-" + b"x" * 100


def _resolver(host: str, port: int) -> list[str]:
    if host in (ALLOWED, REFUSED):
        return ["127.0.0.1"]
    raise OSError(f"no such host {host}")


@pytest.fixture
def served(tmp_path) -> Path:
    """What the registry serves: a file, a dumb-http git repository, an empty flat apt repository."""
    root = tmp_path / "served"
    root.mkdir()
    (root / "p").write_bytes(PAYLOAD)
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    (work / "f").write_text("x\n")
    subprocess.run(["git", "-C", str(work), "add", "f"], check=True)
    subprocess.run(["git", "-C", str(work), "commit", "-qm", "c"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(root / "repo.git")], check=True)
    subprocess.run(["git", "-C", str(root / "repo.git"), "update-server-info"], check=True)
    (root / "apt").mkdir()
    (root / "apt" / "Packages").write_text("")
    parent = root / "m2" / "test" / "gtd" / "parent" / "1.0"  # a Maven repository holding one parent POM
    parent.mkdir(parents=True)
    (parent / "parent-1.0.pom").write_text(MAVEN_PARENT)
    (parent / "parent-1.0.pom.sha1").write_text(hashlib.sha1(MAVEN_PARENT.encode()).hexdigest())
    return root


@pytest.fixture
def server(served):
    handler = functools.partial(_Quiet, directory=str(served))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def ssh_server():
    """Speaks just enough SSH to prove who reached it: its banner, then the client's banner recorded."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    banners: list[bytes] = []

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"SSH-2.0-gtdtest\r\n")
                conn.settimeout(10)
                try:
                    banners.append(conn.recv(256).split(b"\r\n")[0])
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield srv.getsockname()[1], banners
    stop_listening(srv, thread)


def _session(request, home: Path, repo: Path, port: int):
    config = GtdConfig.model_validate({"sandbox": {"interceptPorts": [port], "levels": {"network": {
        "allowDomains": [f"{ALLOWED}:{port}", f"127.0.0.1:{port}"]}}}})
    policy = build_policy(config, workspace=repo, level=Level.NETWORK, home=home)
    session = open_sandbox(policy, resolver=_resolver)
    request.addfinalizer(session.close)
    return session


def _run(session, script: str, repo: Path, timeout: float = 120) -> str:
    r = session.run(["/bin/sh", "-c", script], cwd=repo, timeout=timeout)
    return r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")


PY = sys.executable
NODE_FETCH = "node -e \"fetch('http://{host}:{port}/p').then(r => r.text()).then(t => console.log(t), e => console.log('ERR', e.cause || e))\""
NODE_HTTP = ("node -e \"require('http').get('http://{host}:{port}/p', r => {{ let b = ''; r.on('data', d => b += d);"
             " r.on('end', () => console.log(b)); }}).on('error', e => console.log('ERR', e.message))\"")
JAVA = """cat > /tmp/Fetch.java <<'EOF'
public class Fetch {{
  public static void main(String[] a) throws Exception {{
    var c = (java.net.HttpURLConnection) new java.net.URI(a[0]).toURL().openConnection();
    try (var in = c.getResponseCode() < 400 ? c.getInputStream() : c.getErrorStream()) {{
      System.out.println(new String(in.readAllBytes()));
    }}
  }}
}}
EOF
java /tmp/Fetch.java http://{host}:{port}/p"""
APT = ("mkdir -p /tmp/apt/lists/partial /tmp/apt/cache/archives/partial; echo 'deb [trusted=yes] http://{host}:{port}/apt ./' > /tmp/apt/s.list;"
       " apt-get -o Dir::Etc::SourceList=/tmp/apt/s.list -o Dir::Etc::SourceParts=- -o Dir::State::Lists=/tmp/apt/lists"
       " -o Dir::Cache=/tmp/apt/cache -o APT::Sandbox::User=$(id -un) -o Debug::NoLocking=1 update 2>&1;"
       " ls /tmp/apt/lists | grep -q Packages && echo PACKAGE-CONTENTS-apt")

MAVEN_PARENT = ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion><groupId>test.gtd</groupId>'
                '<artifactId>parent</artifactId><version>1.0</version><packaging>pom</packaging></project>\n')
# Maven resolves a project's parent POM before any plugin runs (`validate` needs none): the download is
# Maven's own HTTP client, which ignores the proxy variables. A mirror in settings.xml names the host, as
# a company one would (Maven refuses plain-HTTP repositories unless a mirror names them). A separate
# local repository per host, so the refused run cannot be served from the allowed run's download.
MAVEN = """mkdir -p /tmp/mvn-{host} && cd /tmp/mvn-{host} && cat > s.xml <<'EOF'
<settings><mirrors><mirror><id>m</id><mirrorOf>*</mirrorOf><url>http://{host}:{port}/m2/</url></mirror></mirrors></settings>
EOF
cat > pom.xml <<'EOF'
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<parent><groupId>test.gtd</groupId><artifactId>parent</artifactId><version>1.0</version></parent><artifactId>app</artifactId></project>
EOF
mvn -B -q -s s.xml -Dmaven.repo.local=/tmp/mvn-{host}/repo validate 2>&1 | tail -3
test -f repo/test/gtd/parent/1.0/parent-1.0.pom && echo PACKAGE-CONTENTS-maven"""
# Gradle resolves a dependency (the same POM) from a Maven repository the build script names.
GRADLE = """mkdir -p /tmp/gradle-{host} && cd /tmp/gradle-{host} && echo "rootProject.name = 'app'" > settings.gradle && cat > build.gradle <<'EOF'
configurations {{ deps }}
repositories {{ maven {{ url "http://{host}:{port}/m2/" }} }}
dependencies {{ deps "test.gtd:parent:1.0@pom" }}
task resolved {{ doLast {{ configurations.deps.files.each {{ println "PACKAGE-CONTENTS-gradle " + it.name }} }} }}
EOF
GRADLE_USER_HOME=/tmp/gradle-{host}/home gradle --no-daemon -q resolved 2>&1 | grep -v -e '^openjdk' -e '^OpenJDK' | tail -4"""

# name -> (program it needs, script template). {host} and {port} are filled in.
CLIENTS = {
    "curl": ("curl", "curl -sS --max-time 30 http://{host}:{port}/p"),
    "curl-ignoring-proxy": ("curl", "curl -sS --max-time 30 --noproxy '*' http://{host}:{port}/p"),
    "wget": ("wget", "wget -q --content-on-error -O - http://{host}:{port}/p"),
    "python-urllib": (None, PY + " -c \"import urllib.request as u\ntry: print(u.urlopen('http://{host}:{port}/p').read().decode())\n"
                            "except Exception as e: print(e.read().decode() if hasattr(e, 'read') else e)\""),
    "python-requests": ("requests", PY + " -c \"import requests; print(requests.get('http://{host}:{port}/p').text)\""),
    "python-httpx": ("httpx", PY + " -c \"import httpx; print(httpx.get('http://{host}:{port}/p', trust_env=True).text)\""),
    "node-fetch": ("node", NODE_FETCH),
    "node-http": ("node", NODE_HTTP),
    "java": ("java", JAVA),
    "git-http": ("git", "git ls-remote http://{host}:{port}/repo.git 2>&1 | grep -q refs/heads/main && echo PACKAGE-CONTENTS-git ||"
                        " git ls-remote http://{host}:{port}/repo.git 2>&1 | tail -2"),
    "apt": ("apt-get", APT),
    "maven": ("mvn", MAVEN),
    "gradle": ("gradle", GRADLE),
}


def _available(need: str | None) -> bool:
    if need is None:
        return True
    if need in ("requests", "httpx"):
        try:
            __import__(need)
            return True
        except ImportError:
            return False
    return shutil.which(need) is not None


@pytest.mark.parametrize("client", list(CLIENTS))
def test_client_reaches_the_allowed_host_and_is_refused_elsewhere(client, request, server, repo, isolated_home):
    need, script = CLIENTS[client]
    if not _available(need):
        pytest.skip(f"{need} is not installed (scripts/setup installs it)")
    session = _session(request, isolated_home, repo, server)
    out = _run(session, script.format(host=ALLOWED, port=server), repo)
    assert "PACKAGE-CONTENTS-" in out, out
    assert session.violations == []
    out = _run(session, script.format(host=REFUSED, port=server), repo)
    assert "PACKAGE-CONTENTS-" not in out, out
    assert [(v.target, v.detail) for v in session.violations][:1] == [(f"{REFUSED}:{server}", "not in the allow list")]
    if client not in ("git-http", "apt", "java", "maven", "gradle"):  # these show only their own summary of the HTTP error
        assert f"gtd sandbox: {REFUSED}:{server} refused: not in the allow list" in out, out


@pytest.mark.skipif(shutil.which("ssh") is None, reason="openssh-client is not installed (scripts/setup installs it)")
def test_ssh_and_git_over_ssh_reach_the_allowed_host_only(request, ssh_server, repo, isolated_home):
    port, banners = ssh_server
    session = _session(request, isolated_home, repo, port)
    opts = f"-o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=20 -p {port}"
    _run(session, f"ssh {opts} git@{ALLOWED} true 2>&1; GIT_SSH_COMMAND='ssh {opts}' git ls-remote ssh://git@{ALLOWED}:{port}/r.git 2>&1", repo)
    assert len(banners) == 2 and all(b.startswith(b"SSH-2.0-OpenSSH") for b in banners), banners
    _run(session, f"ssh {opts} git@{REFUSED} true 2>&1", repo)
    assert len(banners) == 2  # never reached
    assert [v.target for v in session.violations] == [f"{REFUSED}:{port}"]


@pytest.mark.skipif(shutil.which("go") is None, reason="Go is not installed (scripts/setup installs golang-go)")
def test_go_http_client(request, server, repo, isolated_home, tmp_path):
    session = _session(request, isolated_home, repo, server)
    src = repo / "fetch.go"
    src.write_text('package main\nimport ("fmt"; "io"; "net/http"; "os")\nfunc main() {\n'
                   ' r, err := http.Get(os.Args[1]); if err != nil { fmt.Println(err); return }\n'
                   ' b, _ := io.ReadAll(r.Body); fmt.Println(string(b)) }\n')
    env = "GOCACHE=/tmp/gocache GOPATH=/tmp/gopath"
    assert "PACKAGE-CONTENTS-" in _run(session, f"{env} go run fetch.go http://{ALLOWED}:{server}/p", repo)
    out = _run(session, f"{env} go run fetch.go http://{REFUSED}:{server}/p", repo)
    assert f"gtd sandbox: {REFUSED}:{server} refused" in out


def test_outside_the_sandbox_the_same_scripts_need_no_gtd(server):
    """The servers themselves work (a failure inside is the sandbox's, not the fixture's)."""
    with socket.create_connection(("127.0.0.1", server)) as s:
        s.sendall(b"GET /p HTTP/1.0\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    assert PAYLOAD in data
    assert os.path.exists(shutil.which("curl") or "/usr/bin/curl")
