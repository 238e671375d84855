"""Package caches in the sandbox: where each tool's cache is, and that writes stay per project."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.sandbox.linux.cache_layer import CacheLayer
from gtd.sandbox.policy.caches import known_caches
from gtd.sandbox.policy.sandbox_policy import build_policy
from gtd.sandbox.session import open_sandbox
from workload_support import run
from support import as_the_owner, git

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def test_cache_locations_follow_the_tools_variables(tmp_path):
    home = tmp_path / "h"
    env = {"PIP_CACHE_DIR": "/data/pip", "XDG_CACHE_HOME": "/xdg", "npm_config_cache": "/data/npm",
           "CARGO_HOME": "/opt/cargo", "GOPATH": "/gp:/other", "GRADLE_USER_HOME": "/g"}
    found = {c.tool: (str(c.path), c.origin) for c in known_caches(home, env)}
    assert found["pip"] == ("/data/pip", "PIP_CACHE_DIR")
    assert found["uv"] == ("/xdg/uv", "default")
    assert found["npm"] == ("/data/npm", "npm_config_cache")
    assert found["cargo-registry"][0] == "/opt/cargo/registry"
    assert found["go-mod"][0] == "/gp/pkg/mod" and found["go-build"][0] == "/xdg/go-build"
    assert found["gradle"][0] == "/g/caches" and found["maven"][0] == str(home / ".m2/repository")
    (home / ".config/pip").mkdir(parents=True)
    (home / ".config/pip/pip.conf").write_text("[global]\ncache-dir = /srv/pip-cache\n")
    home.joinpath(".npmrc").write_text("cache=~/npm-cache\n")
    from_files = {c.tool: str(c.path) for c in known_caches(home, {})}
    assert from_files["pip"] == "/srv/pip-cache" and from_files["npm"] == str(home / "npm-cache")
    (home / ".config/pip/pip.conf").unlink()
    home.joinpath(".npmrc").unlink()
    defaults = {c.tool: str(c.path) for c in known_caches(home, {})}
    assert defaults["pip"] == str(home / ".cache/pip") and defaults["npm"] == str(home / ".npm")
    assert defaults["go-mod"] == str(home / "go/pkg/mod") and defaults["ccache"] == str(home / ".cache/ccache")


def test_cache_locations_the_tools_own_config_files_move(tmp_path):
    """`go env -w`, settings.xml <localRepository> and ccache.conf `cache_dir` move a cache as the variables
    do; the variable still wins over the file, as in each tool."""
    home = tmp_path / "h"
    (home / ".config/go").mkdir(parents=True)
    (home / ".config/go/env").write_text("GOMODCACHE=/srv/gomod\nGOCACHE=/srv/gobuild\n")
    (home / ".m2").mkdir()
    (home / ".m2/settings.xml").write_text('<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">'
                                           "<localRepository>${user.home}/m2repo</localRepository></settings>")
    (home / ".config/ccache").mkdir()
    (home / ".config/ccache/ccache.conf").write_text("max_size = 5G\ncache_dir = /srv/ccache\n")
    found = {c.tool: (str(c.path), c.origin) for c in known_caches(home, {})}
    assert found["go-mod"] == ("/srv/gomod", "~/.config/go/env GOMODCACHE")
    assert found["go-build"] == ("/srv/gobuild", "~/.config/go/env GOCACHE")
    assert found["maven"] == (str(home / "m2repo"), "~/.m2/settings.xml localRepository")
    assert found["ccache"] == ("/srv/ccache", "~/.config/ccache/ccache.conf cache_dir")
    env = {"GOMODCACHE": "/e/mod", "GOCACHE": "/e/build", "CCACHE_DIR": "/e/ccache"}
    found = {c.tool: (str(c.path), c.origin) for c in known_caches(home, env)}
    assert found["go-mod"] == ("/e/mod", "GOMODCACHE") and found["go-build"] == ("/e/build", "GOCACHE")
    assert found["ccache"] == ("/e/ccache", "CCACHE_DIR")
    (home / ".config/go/env").write_text("GOPATH=/srv/gopath\n")  # GOPATH from the file, unless the variable sets it
    assert {c.tool: str(c.path) for c in known_caches(home, {})}["go-mod"] == "/srv/gopath/pkg/mod"
    assert {c.tool: str(c.path) for c in known_caches(home, {"GOPATH": "/e/gp"})}["go-mod"] == "/e/gp/pkg/mod"


def _project(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    root.mkdir()
    git(root, "init", "-q")
    return root


@needs_bwrap
def test_cache_writes_stay_in_their_project(tmp_path, isolated_home):
    cache = isolated_home / ".npm"
    cache.mkdir()
    (cache / "shared").write_text("from the person\n")
    one, two = _project(tmp_path, "one"), _project(tmp_path, "two")
    with open_sandbox(build_policy(GtdConfig(), workspace=one, level=Level.READWRITE, home=isolated_home)) as s:
        r = run(s, "cat ~/.npm/shared && echo poisoned > ~/.npm/shared && echo new > ~/.npm/added && cat ~/.npm/shared", one)
        assert r.stdout == "from the person\npoisoned\n", r.stderr
    with open_sandbox(build_policy(GtdConfig(), workspace=two, level=Level.READWRITE, home=isolated_home)) as s:
        r = run(s, "cat ~/.npm/shared; ls ~/.npm", two)
        assert r.stdout == "from the person\nshared\n", r.stderr
    with open_sandbox(build_policy(GtdConfig(), workspace=one, level=Level.READWRITE, home=isolated_home)) as s:
        r = run(s, "cat ~/.npm/shared ~/.npm/added", one)  # the project keeps its own layer across runs
        assert r.stdout == "poisoned\nnew\n", r.stderr
    assert (cache / "shared").read_text() == "from the person\n" and sorted(p.name for p in cache.iterdir()) == ["shared"]


@needs_bwrap
def test_caches_are_read_only_at_readonly(tmp_path, isolated_home):
    (isolated_home / ".npm").mkdir()
    ws = _project(tmp_path, "ws")
    policy = build_policy(GtdConfig(), workspace=ws, level=Level.READONLY, home=isolated_home)
    assert policy.caches == ()
    with open_sandbox(policy) as s:
        r = run(s, "touch ~/.npm/x", ws)
    assert r.returncode != 0 and not (isolated_home / ".npm" / "x").exists()


@needs_bwrap
def test_without_overlays_each_tool_gets_a_per_project_cache(tmp_path, isolated_home, monkeypatch):
    def impossible(self):
        raise OSError("overlayfs not available (test)")

    monkeypatch.setattr(CacheLayer, "_start_overlay", impossible)
    (isolated_home / ".cache" / "pip").mkdir(parents=True)
    ws = _project(tmp_path, "ws")
    with open_sandbox(build_policy(GtdConfig(), workspace=ws, level=Level.READWRITE, home=isolated_home)) as s:
        r = run(s, 'echo "$PIP_CACHE_DIR"; echo x > "$PIP_CACHE_DIR/written" && echo ok; touch ~/.cache/pip/y || echo ro;'
                   ' echo "$XDG_CACHE_HOME"; mkdir -p "$XDG_CACHE_HOME/puppeteer" && echo ok', ws)
    target, written, ro, cache_home, created = r.stdout.split()
    assert written == "ok" and ro == "ro" and created == "ok", r.stderr
    assert Path(target, "written").is_file() and str(ws.name) in target
    assert Path(cache_home, "puppeteer").is_dir() and str(ws.name) in cache_home  # XDG_CACHE_HOME: the project's own
    assert list((isolated_home / ".cache" / "pip").iterdir()) == []
    assert not (isolated_home / ".cache" / "puppeteer").exists()


def test_a_cache_that_leads_into_the_workspace_or_a_secret_is_left_alone(tmp_path, isolated_home):
    ws = _project(tmp_path, "ws")
    (ws / "npm-cache").mkdir()
    (isolated_home / ".npm").symlink_to(ws / "npm-cache")
    (isolated_home / ".ssh").mkdir()
    (isolated_home / ".cache").mkdir(exist_ok=True)
    (isolated_home / ".cache" / "pip").symlink_to(isolated_home / ".ssh")
    policy = build_policy(GtdConfig(), workspace=ws, level=Level.READWRITE, home=isolated_home)
    assert not {"npm", "pip"} & {c.tool for c in policy.caches}


@needs_bwrap
def test_two_sessions_of_one_project_never_share_an_upper_layer(tmp_path, isolated_home):
    cache = isolated_home / ".npm"
    cache.mkdir()
    ws = _project(tmp_path, "ws")
    policy = build_policy(GtdConfig(), workspace=ws, level=Level.READWRITE, home=isolated_home)
    with open_sandbox(policy) as first, open_sandbox(policy) as second:
        assert run(first, "echo one > ~/.npm/first", ws).returncode == 0
        r = run(second, "echo two > ~/.npm/second; ls ~/.npm", ws)
        assert r.stdout.split() == ["second"], r.stderr  # the second session got a throwaway layer of its own
        assert run(first, "ls ~/.npm", ws).stdout.split() == ["first"]
    with open_sandbox(policy) as again:  # the project's own layer kept the first session's writes only
        assert run(again, "ls ~/.npm", ws).stdout.split() == ["first"]
    assert list(cache.iterdir()) == []
    from gtd.sandbox.linux.cache_layer import layer_dir
    assert not list(layer_dir(ws).glob("session-*"))


@needs_bwrap
def test_the_overlay_holder_ends_with_its_session(tmp_path, isolated_home):
    (isolated_home / ".npm").mkdir()
    ws = _project(tmp_path, "ws")
    session = open_sandbox(build_policy(GtdConfig(), workspace=ws, level=Level.READWRITE, home=isolated_home))
    assert run(session, "touch ~/.npm/x", ws).returncode == 0
    holder = session.backend.caches._holder
    assert session.backend.caches.mode == "overlay" and holder.poll() is None
    session.close()
    assert holder.returncode is not None and holder.stdout.closed
    assert not Path(f"/proc/{holder.pid}").exists() or Path(f"/proc/{holder.pid}/status").read_text().find("Zombie") < 0


def test_removing_a_throwaway_layer_gives_locked_dirs_back_and_never_follows_a_symlink_the_agent_left(tmp_path):
    # The agent writes the upper layer through the overlay: a read-only dir holding a symlink, a locked dir
    # (chmod 0000) holding files. Both are removed, and what the link points at is never changed. Run as
    # the owner without root's DAC override (root ignores the modes).
    import subprocess
    import sys

    victim = tmp_path / "victim"
    victim.mkdir()
    victim.chmod(0o500)  # a directory of the person's the link names: not to be given its owner's rwx
    layer = tmp_path / "layer"
    trap = layer / "pip" / "upper" / "d"
    trap.mkdir(parents=True)
    (trap / "link").symlink_to(victim)
    (trap / "locked" / "deeper").mkdir(parents=True)
    (trap / "locked" / "deeper" / "f").write_text("x")
    (trap / "locked" / "deeper").chmod(0)
    (trap / "locked").chmod(0)
    trap.chmod(0o500)
    code = f"from pathlib import Path; from gtd.sandbox.linux.cache_layer import _remove_tree; _remove_tree(Path({str(layer)!r}))"
    subprocess.run([*as_the_owner(), sys.executable, "-c", code], check=True, timeout=60)
    assert not layer.exists()
    assert victim.stat().st_mode & 0o777 == 0o500


@needs_bwrap
def test_any_tool_can_keep_a_cache_in_the_cache_home_per_project(tmp_path, isolated_home):
    # node-gyp, puppeteer, playwright, pre-commit, poetry…: no package manager gtd knows, yet a write under
    # ~/.cache failed with EROFS (headless `npm install puppeteer` just failed).
    (isolated_home / ".cache" / "pip").mkdir(parents=True)
    (isolated_home / ".cache" / "pip" / "wheel").write_text("from the person\n")
    one, two = _project(tmp_path, "one"), _project(tmp_path, "two")
    with open_sandbox(build_policy(GtdConfig(), workspace=one, level=Level.READWRITE, home=isolated_home)) as s:
        r = run(s, "mkdir -p ~/.cache/puppeteer && echo x > ~/.cache/puppeteer/f && echo y > ~/.cache/pip/wheel"
                   " && cat ~/.cache/puppeteer/f ~/.cache/pip/wheel", one)
        assert r.returncode == 0 and r.stdout == "x\ny\n", r.stderr
    assert not (isolated_home / ".cache" / "puppeteer").exists()  # the person's real cache home is untouched
    assert (isolated_home / ".cache" / "pip" / "wheel").read_text() == "from the person\n"
    with open_sandbox(build_policy(GtdConfig(), workspace=one, level=Level.NETWORK, home=isolated_home)) as s:
        r = run(s, "cat ~/.cache/puppeteer/f ~/.cache/pip/wheel", one)  # kept for the project's next run
        assert r.stdout == "x\ny\n", r.stderr
    with open_sandbox(build_policy(GtdConfig(), workspace=two, level=Level.READWRITE, home=isolated_home)) as s:
        r = run(s, "ls ~/.cache; cat ~/.cache/pip/wheel", two)  # another project sees only the person's cache
        assert r.stdout.split() == ["pip", "from", "the", "person"], r.stderr
    ro = build_policy(GtdConfig(), workspace=one, level=Level.READONLY, home=isolated_home)
    with open_sandbox(ro) as s:
        r = run(s, "mkdir -p ~/.cache/puppeteer", one)
    assert r.returncode != 0 and "Read-only" in r.stderr and not (isolated_home / ".cache" / "puppeteer").exists()


@needs_bwrap
def test_protected_and_hidden_paths_in_the_cache_home_stay_so(tmp_path, isolated_home, monkeypatch):
    # The cache home is writable as a whole, but what is mounted over it is not: a CLI's token kept there
    # stays hidden (and its dir cannot be renamed away from the mount), gtd itself installed there (uvx)
    # stays read-only.
    from gtd.sandbox.policy import sandbox_policy as policy_module

    cache = isolated_home / ".cache"
    (cache / "huggingface").mkdir(parents=True)
    (cache / "huggingface" / "token").write_text("hf_secret\n")
    installed = cache / "uv" / "archive-v0" / "gtd-env"
    installed.mkdir(parents=True)
    (installed / "hook.py").write_text("# run by the host\n")
    original = policy_module.gtd_install_paths
    monkeypatch.setattr(policy_module, "gtd_install_paths", lambda: [*original(), installed])
    ws = _project(tmp_path, "ws")
    policy = build_policy(GtdConfig(), workspace=ws, level=Level.NETWORK, home=isolated_home)
    assert policy.caches[0].tool == "cache-home"
    with open_sandbox(policy) as s:
        r = run(s, "echo ok > ~/.cache/free && cat ~/.cache/free; cat ~/.cache/huggingface/token;"
                   " mv ~/.cache/huggingface ~/.cache/hf2 || echo kept;"
                   " echo evil > ~/.cache/uv/archive-v0/gtd-env/hook.py || echo ro;"
                   " touch ~/.cache/uv/archive-v0/gtd-env/new || echo ro", ws)
        assert s.backend.caches.mode == "overlay"
    assert "hf_secret" not in r.stdout and r.stdout.split() == ["ok", "kept", "ro", "ro"], (r.stdout, r.stderr)
    assert "Read-only" in r.stderr
    assert (installed / "hook.py").read_text() == "# run by the host\n" and not (cache / "free").exists()


def test_the_cache_home_is_left_alone_when_it_holds_a_writable_path(tmp_path, isolated_home):
    # A configured writable path in it must write the real cache: bound through the overlay, it would not.
    ws = _project(tmp_path, "ws")
    (isolated_home / ".cache" / "mine").mkdir(parents=True)
    tools = lambda policy: [c.tool for c in policy.caches]  # noqa: E731
    assert "cache-home" in tools(build_policy(GtdConfig(), workspace=ws, level=Level.READWRITE, home=isolated_home))
    held = build_policy(GtdConfig(), workspace=ws, level=Level.READWRITE, home=isolated_home,
                        extra_writable=[isolated_home / ".cache" / "mine"])
    assert "cache-home" not in tools(held)
    inside = isolated_home / ".cache" / "work"
    inside.mkdir()
    git(inside, "init", "-q")
    assert "cache-home" not in tools(build_policy(GtdConfig(), workspace=inside, level=Level.READWRITE,
                                                  home=isolated_home))
