"""The Landlock backend (docs/landlock-backend.md), for real: gtd started under a seccomp filter that refuses
namespaces (no_userns.py, as Docker's default profile does) picks it by itself, and the probes that matter
are refused there; in-process sessions with `sandbox.backend: landlock` probe the rest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.sandbox.linux.landlock import abi_version
from sandbox_support import git, sh
from support import serving

HARNESS = Path(__file__).with_name("no_userns.py")
GTD = Path(sys.executable).with_name("gtd")

pytestmark = [pytest.mark.landlock,
              pytest.mark.skipif(abi_version() < 4, reason="the Landlock backend needs Landlock ABI 4 (Linux 6.7+)")]


def landlock(extra: dict | None = None) -> GtdConfig:
    return GtdConfig.model_validate({"sandbox": {"backend": "landlock", **(extra or {})}})


def gtd_without_namespaces(args: list[str], cwd: Path, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(HARNESS), "--", str(GTD), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, **kw)


# -- auto picks it where namespaces are refused ----------------------------------------------------

def test_without_namespaces_gtd_sandbox_run_is_sandboxed_by_landlock(repo, home):
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("SECRET-KEY\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("AWS-SECRET\n")
    (repo / "src").mkdir()
    outside = repo.parent / "outside.txt"
    probe = (f"echo in > src/new.txt && echo workspace-ok; echo x > {outside} || echo outside-refused; "
             f"cat {home}/.ssh/id_ed25519 || echo ssh-refused; cat {home}/.aws/credentials || echo aws-refused; "
             "echo hook > .git/hooks/pre-commit || echo hook-refused; echo x >> .git/config || echo config-refused; "
             "echo '{}' > .gtdrc.json || echo gtdrc-refused; echo $TMPDIR > src/tmpdir")
    r = gtd_without_namespaces(["sandbox", "run", "--level", "readwrite", "--", "sh", "-c", probe], repo)
    assert r.returncode == 0, r.stderr
    assert "Landlock backend" in r.stderr and "gtd doctor" in r.stderr  # the one line at start
    assert "creating a user namespace failed" in r.stderr  # why bwrap was not used
    for said in ("workspace-ok", "outside-refused", "ssh-refused", "aws-refused", "hook-refused", "config-refused",
                 "gtdrc-refused"):
        assert said in r.stdout, (said, r.stdout, r.stderr)
    assert "SECRET" not in r.stdout
    assert (repo / "src/new.txt").read_text() == "in\n" and not outside.exists()
    assert not (repo / ".git/hooks/pre-commit").exists() and "x\n" not in (repo / ".git/config").read_text()
    private_tmp = (repo / "src/tmpdir").read_text().strip()
    assert private_tmp.startswith("/tmp/gtd-landlock-") and not os.path.exists(private_tmp)  # removed at close


def test_without_namespaces_direct_network_and_udp_are_refused(repo):
    with serving(b"served") as port:
        probe = (f"{sys.executable} -c \"import socket\n"
                 "for kind in (socket.SOCK_DGRAM, socket.SOCK_RAW):\n"
                 "    try: socket.socket(socket.AF_INET, kind); print('made', kind)\n"
                 "    except OSError as e: print('refused', kind, e.errno)\n"
                 "s = socket.socket()\n"
                 f"try: s.connect(('127.0.0.1', {port})); print('direct-connected')\n"
                 "except OSError as e: print('direct-refused', e.errno)\n"
                 "try: socket.socket(socket.AF_UNIX); print('unix-made')\n"
                 "except OSError as e: print('unix-refused', e.errno)\n\"")
        r = gtd_without_namespaces(["sandbox", "run", "--level", "network", "--", "sh", "-c", probe], repo)
    assert "refused 2 1" in r.stdout and "refused 3 1" in r.stdout, r.stdout + r.stderr  # UDP, raw: EPERM
    assert "direct-refused 13" in r.stdout and "unix-refused 1" in r.stdout, r.stdout + r.stderr  # EACCES: Landlock


def test_the_sandboxed_command_dies_with_gtd(repo):
    proc = subprocess.Popen([sys.executable, str(HARNESS), "--", str(GTD), "sandbox", "run", "--level", "readwrite",
                             "--", "sh", "-c", "echo $$; exec sleep 60"], cwd=repo, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        pid = int(proc.stdout.readline())
        os.kill(pid, 0)  # running
        proc.kill()  # gtd dies without cleaning up: the parent-death signal takes the command
        proc.wait()
        assert _gone_within(pid, 10)
    finally:
        proc.kill()


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    return not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_with_neither_namespaces_nor_landlock_gtd_stops(repo, monkeypatch):
    """Fails closed: no Landlock network rules (faked here as an old kernel), no sandbox, exit 3."""
    from gtd.errors import SandboxUnavailable
    from gtd.sandbox.linux import kernel
    from gtd.sandbox.policy.sandbox_policy import build_policy
    from gtd.sandbox.session import SandboxSession

    monkeypatch.setattr(kernel, "landlock_abi", lambda **kw: 3)
    policy = build_policy(landlock(), workspace=repo, level=Level.READWRITE)
    with pytest.raises(SandboxUnavailable, match="needs Landlock ABI 4"):
        SandboxSession(policy).start()


# -- in-process sessions with sandbox.backend: landlock ---------------------------------------------

def test_allowed_hosts_are_reached_through_the_proxy_and_others_refused(sandbox, repo):
    with serving(b"PACKAGE") as port:
        config = landlock({"levels": {"network": {"allowDomains": [f"127.0.0.1:{port}", f"registry.test:{port}"]}}})
        s = sandbox(Level.NETWORK, config=config,
                    resolver=lambda host, p: ["127.0.0.1"] if host == "registry.test" else [])
        r = sh(s, f"curl -sS -m 10 http://registry.test:{port}/x; echo; "
                  f"curl -sS -m 10 --noproxy '*' http://127.0.0.1:{port}/x || echo direct-refused; "
                  "curl -fsS -m 10 http://denied.test/ || echo denied-refused", repo)
    assert r.out.splitlines()[0] == "PACKAGE", r.out + r.err
    assert "direct-refused" in r.out and "denied-refused" in r.out
    assert any(v.kind == "network" and v.target.startswith("denied.test") for v in s.violations)


def test_protected_names_the_agent_creates_are_quarantined(sandbox, repo):
    (repo / "pkg").mkdir()
    s = sandbox(Level.READWRITE, config=landlock())
    r = sh(s, "mkdir pkg/.git && echo x > pkg/.git/HEAD; mkdir pkg/.claude && echo x > pkg/.claude/settings.json; "
              "mkdir newdir || echo root-refused; mv .git g || echo move-refused", repo)
    assert "root-refused" in r.out and "move-refused" in r.out, r.out + r.err
    s.close()
    assert not (repo / "pkg/.git").exists() and not (repo / "pkg/.claude").exists()
    assert {v.target for v in s.violations if "quarantine" in v.detail} >= {str(repo / "pkg/.git"), str(repo / "pkg/.claude")}
    git("status", cwd=repo)


def test_hard_links_and_symlinks_do_not_carry_rights_out(sandbox, repo, home):
    (repo / "src").mkdir()
    (home / ".ssh").mkdir()
    (home / ".ssh/id_rsa").write_text("KEY\n")
    s = sandbox(Level.READWRITE, config=landlock())
    r = sh(s, f"ln .git/config src/cfg || echo link-refused; ln -s {home}/.ssh/id_rsa src/key; "
              "cat src/key || echo read-refused; echo pwn >> src/cfg || true", repo)
    assert "link-refused" in r.out and "read-refused" in r.out, r.out + r.err
    assert "pwn" not in (repo / ".git/config").read_text()


def test_signals_do_not_reach_host_processes(sandbox, repo):
    victim = subprocess.Popen(["sleep", "30"])
    try:
        s = sandbox(Level.READWRITE, config=landlock())
        r = sh(s, f"kill -9 {victim.pid} || echo kill-refused; cat /proc/{victim.pid}/environ || echo environ-refused",
               repo)
        assert "kill-refused" in r.out and "environ-refused" in r.out, r.out + r.err
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


def test_the_python_launcher_applies_the_same_rules(sandbox, repo, home, monkeypatch):
    import gtd.sandbox.linux.nativelaunch as nativelaunch

    monkeypatch.setattr(nativelaunch, "launcher_path", lambda **kw: None)
    (home / ".ssh").mkdir()
    (home / ".ssh/id_rsa").write_text("KEY\n")
    (repo / "src").mkdir()
    s = sandbox(Level.READWRITE, config=landlock())
    r = sh(s, f"echo ok > src/a && cat src/a; cat {home}/.ssh/id_rsa || echo ssh-refused; "
              "echo x > .git/hooks/pre-commit || echo hook-refused; grep -c Cap[EP] /proc/self/status; "
              "grep CapEff /proc/self/status", repo)
    assert "ok" in r.out and "ssh-refused" in r.out and "hook-refused" in r.out, r.out + r.err
    assert "CapEff:\t0000000000000000" in r.out
    assert "launch.py" in " ".join(s.backend._launcher)


def test_a_read_only_phase_writes_only_its_file_and_leaves_the_repository_alone(sandbox, repo):
    """At plan (readonly) only TODO.md is writable: a file rule, which cannot gain entries, so the work
    tree is not walked for planted repositories (it was not walked at build either: .git was taken for one)."""
    from gtd.config.levels import Phase

    s = sandbox(Level.READONLY, config=landlock(), phase=Phase.PLAN)
    r = sh(s, "echo '# plan' > TODO.md && echo todo-ok; echo x > README.md || echo readme-refused", repo)
    assert "todo-ok" in r.out and "readme-refused" in r.out, r.out + r.err
    s.close()
    assert (repo / ".git").is_dir() and (repo / "TODO.md").read_text() == "# plan\n"
    assert [v for v in s.violations if "quarantine" in v.detail] == []
    git("status", cwd=repo)


def test_doctor_and_explain_name_the_backend_why_and_what_is_weaker(repo):
    r = gtd_without_namespaces(["doctor", "--json"], repo, timeout=120)
    rows = {c["name"]: c for c in json.loads(r.stdout)["checks"]}
    backend = rows["sandbox backend"]
    assert "Landlock" in backend["detail"] and "creating a user namespace failed" in backend["detail"], backend
    assert "takes no new entries" in backend["detail"] and "/proc" in backend["detail"]
    assert rows["sandbox start"]["ok"] and "Landlock" in rows["sandbox start"]["detail"], rows["sandbox start"]
    r = gtd_without_namespaces(["sandbox", "explain", "--level", "readwrite"], repo)
    assert "backend: landlock (bubblewrap cannot create its namespaces here" in r.stdout, r.stdout + r.stderr
    assert r.stdout.count("  weaker: ") >= 5


def test_where_bwrap_works_auto_keeps_bwrap(repo):
    from gtd.host_programs import host_program
    from gtd.sandbox.linux.backend_choice import choose

    if host_program("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    assert choose("auto", host_program("bwrap")).name == "bwrap"
    r = subprocess.run([str(GTD), "sandbox", "explain", "--level", "readwrite"], cwd=repo, capture_output=True, text=True)
    assert "backend: bwrap" in r.stdout and "weaker" not in r.stdout, r.stdout + r.stderr


def test_a_whole_run_plan_build_learn_without_namespaces(repo):
    """`gtd --all` where namespaces are refused: the scripted agent plans, builds into an existing directory
    (the work tree's root takes no new entries under this backend) and learns; its try at a git hook is refused."""
    from support import git as git_in

    (repo / "src").mkdir()
    (repo / "src/__init__.py").write_text("")
    plan = ("# Counter\n\n## Action items\n- [ ] Add src/count.py with add(a, b)\n  - Tests: src/test_count.py\n\n"
            "## Open questions\n\n## Learnings\n- Use unittest.\n")
    test_file = ("import unittest\nfrom count import add\n\n\nclass T(unittest.TestCase):\n"
                 "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n")
    build = {"actions": [{"shell": "echo pwned > .git/hooks/pre-commit"},
                         {"write": {"path": "src/count.py", "content": "def add(a, b):\n    return a + b\n"}},
                         {"write": {"path": "src/test_count.py", "content": test_file}}]}
    script = repo.parent / "script.json"
    script.write_text(json.dumps({
        "plan": [{"actions": [{"write": {"path": "TODO.md", "content": plan}}]}], "build": [build],
        "learn": [{"actions": [{"write": {"path": "AGENTS.md", "content": "# Notes\n- Use unittest.\n"}}]}]}))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(script),
                                                  "testCommand": "python3 -m unittest discover -q -s src",
                                                  "testRetries": 1}))
    (repo / "TODO.md").write_text("# Counter\nadd numbers\n")
    git_in(repo, "add", "-A")
    git_in(repo, "commit", "-q", "-m", "configure gtd")
    r = subprocess.run([sys.executable, str(HARNESS), "--", sys.executable, "-m", "gtd", "--all"], cwd=repo,
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert r.stderr.count("Landlock backend") == 1  # one line, once per gtd run
    subjects = git_in(repo, "log", "--format=%s").splitlines()
    assert any(s.startswith("🔨 build: Add src/count.py") for s in subjects), subjects
    assert (repo / "src/count.py").exists() and not (repo / ".git/hooks/pre-commit").exists()


def test_a_daemon_that_left_the_process_group_dies_at_close_without_a_cgroup(sandbox, repo, monkeypatch):
    """No PID namespace and no cgroup (a container's usual lot): the launcher is the command's subreaper, and
    gtd the launcher's. A command still running at close is killed with its group; what it started with
    setsid comes back to gtd and is killed there."""
    from gtd.sandbox.linux import kernel

    monkeypatch.setattr(kernel.KernelLayers, "cgroup", lambda self: None)
    monkeypatch.setattr(kernel, "cgroup_support", lambda: {})
    (repo / "src").mkdir()
    s = sandbox(Level.READWRITE, config=landlock())
    assert not s.backend.cgroups.all
    proc = s.popen(["sh", "-c", "setsid sh -c 'sleep 60 & echo $! > src/pid; wait' > /dev/null 2>&1 & exec sleep 60"],
                   cwd=repo, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not (repo / "src/pid").exists() or not (repo / "src/pid").read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    pid = int((repo / "src/pid").read_text())
    assert _alive(pid) and os.getpgid(pid) != os.getpgid(proc.pid)
    s.close()
    assert not _alive(pid) and proc.poll() is not None


def test_when_gtd_dies_what_the_command_left_running_dies_too(repo):
    proc = subprocess.Popen([sys.executable, str(HARNESS), "--", str(GTD), "sandbox", "run", "--level", "readwrite",
                             "--", "sh", "-c", "setsid sleep 61 > /dev/null 2>&1 & echo $!; exec sleep 60"], cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        pid = int(proc.stdout.readline())
        assert _alive(pid)
        proc.kill()  # gtd gets no chance to clean up: the launcher's parent-death signal does it
        proc.wait()
        assert _gone_within(pid, 10)
    finally:
        proc.kill()


def test_namespaces_that_worked_are_remembered_per_context_never_a_refusal(repo):
    from gtd.host_programs import host_program
    from gtd.sandbox.linux import backend_choice

    bwrap = host_program("bwrap")
    if bwrap is None or backend_choice._unshare_in_child() is not None:
        pytest.skip("needs a host where bubblewrap's namespaces work")
    assert backend_choice.namespaces_refused(bwrap) is None
    marker, _ = backend_choice._marker()
    assert marker.exists() and backend_choice._remembered_working()
    # The same HOME under a filter that refuses namespaces is another context: probed, and refused.
    code = "from gtd.sandbox.linux.backend_choice import namespaces_refused as n; print(n())"
    r = subprocess.run([sys.executable, str(HARNESS), "--", sys.executable, "-c", code], capture_output=True,
                       text=True, cwd=repo)
    assert "creating a user namespace failed" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("launcher", ["native", "python"])
def test_the_launcher_passes_the_commands_status_on_and_ends_what_it_left(sandbox, repo, launcher, monkeypatch):
    """The launcher stands in for a PID namespace's init: the command's exit status (or its signal) is the
    launcher's, and what the command left running is killed when it ends."""
    import gtd.sandbox.linux.nativelaunch as nativelaunch

    if launcher == "python":
        monkeypatch.setattr(nativelaunch, "launcher_path", lambda **kw: None)
    elif nativelaunch.launcher_path() is None:
        pytest.skip("no C compiler here: only the Python launcher can run")
    s = sandbox(Level.READWRITE, config=landlock())
    assert ("launch.py" in " ".join(s.backend._launcher)) is (launcher == "python")
    assert sh(s, "exit 7", repo).returncode == 7
    assert sh(s, "kill -TERM $$", repo).returncode == -signal.SIGTERM
    r = sh(s, "setsid sleep 62 > /dev/null 2>&1 & echo $!", repo)
    pid = int(r.out.split()[-1])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    assert not _alive(pid)


def test_an_agent_state_dir_takes_new_entries_and_its_protected_files_are_put_back(sandbox, repo):
    """An agent CLI's state dir is granted whole (the CLI makes session dirs at its top); its settings and
    hooks are copied at start, and what the agent changed there is quarantined and put back at the end."""
    from gtd import paths
    from gtd.providers.base import SandboxNeeds

    state = paths.agents_dir() / "claude"
    (state / "hooks").mkdir(parents=True)
    (state / "hooks/ok.sh").write_text("true\n")
    (state / "settings.json").write_text('{"hooks": {}}')
    needs = SandboxNeeds(writable_dirs=[state], protected_paths=[state / "settings.json", state / "hooks"])
    s = sandbox(Level.READWRITE, config=landlock(), needs=needs)
    r = sh(s, f"mkdir {state}/session-env && echo s > {state}/session-env/a && echo new-dir-ok; "
              f"echo '{{\"hooks\": \"evil\"}}' > {state}/settings.json; echo evil > {state}/hooks/pre.sh; "
              f"rm {state}/hooks/ok.sh", repo)
    assert "new-dir-ok" in r.out, r.out + r.err
    s.close()
    assert (state / "settings.json").read_text() == '{"hooks": {}}'
    assert sorted(p.name for p in (state / "hooks").iterdir()) == ["ok.sh"]
    assert (state / "session-env/a").read_text() == "s\n"  # the agent's own state stays
    put_back = {v.target for v in s.violations if "put back" in v.detail}
    assert put_back == {str(state / "settings.json"), str(state / "hooks")}, s.violations
    quarantined = paths.project_state_dir(repo) / "quarantine"
    assert any(p.name == "settings.json.quarantined" for p in quarantined.rglob("*"))


def test_gtds_own_config_in_a_writable_dir_stays_refused_during_the_session(sandbox, repo, home):
    """Outside the agents' state dirs nothing protected is granted: gtd reads its own config mid-run."""
    from gtd import paths
    from gtd.providers.base import SandboxNeeds

    paths.user_config_dir().mkdir(parents=True)
    s = sandbox(Level.READWRITE, config=landlock(), needs=SandboxNeeds(writable_dirs=[home / ".config"]))
    r = sh(s, f"echo x > {paths.user_config_dir()}/config.toml || echo refused; mkdir {home}/.config/other || "
              "echo top-refused", repo)
    assert "refused" in r.out and "top-refused" in r.out, r.out + r.err
    assert not (paths.user_config_dir() / "config.toml").exists()


def test_a_chmod_on_a_protected_path_is_undone_at_the_end(sandbox, repo):
    """Landlock does not cover metadata: a disabled hook made executable inside is disabled again at close."""
    hook = repo / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\necho pwned\n")
    hook.chmod(0o644)
    s = sandbox(Level.READWRITE, config=landlock())
    r = sh(s, "chmod +x .git/hooks/pre-commit && echo armed; chmod u+s .git/hooks/pre-commit || echo setuid-refused", repo)
    assert "armed" in r.out and "setuid-refused" in r.out, r.out + r.err
    s.close()
    assert hook.stat().st_mode & 0o777 == 0o644
    assert any(v.target == str(hook) and "put back" in v.detail for v in s.violations)


def test_without_namespaces_the_demo_runs_its_whole_workflow(tmp_path):
    # The workspace root takes no new entries under Landlock (docs/landlock-backend.md): the demo agent's
    # greet.py and test_greet.py at the root are refused, gtd finds the level allows them, creates them on
    # the host and resumes the agent, which writes them again. The planted hook stays refused.
    target = tmp_path / "demo"
    result = gtd_without_namespaces(["demo", "--keep", str(target)], tmp_path, timeout=180,
                                    env={**os.environ, "GTD_DEMO_SCRIPT": ""})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Landlock backend" in result.stderr
    log = git("log", "--format=%s", cwd=target).stdout.splitlines()
    assert log[0].startswith("🧹 cleanup") and sum(1 for s in log if s.startswith("🔨 build")) == 2, log
    assert "def greet" in (target / "greet.py").read_text() and (target / "test_greet.py").is_file()
    assert not (target / ".git" / "hooks" / "pre-commit").exists()
    assert ".git/hooks/pre-commit" in result.stdout
    # Said as what it is, in the live view and the summary: not an approval "by saved rule"
    why = "created by gtd: the Landlock backend cannot let the agent add entries to the workspace root"
    assert f"approved: {target}/greet.py ({why})" in result.stderr, result.stderr
    assert sum(f"{target}/greet.py ({why})" in line for line in result.stderr.splitlines()) == 2, result.stderr
    assert "by saved rule" not in result.stderr


def test_without_namespaces_a_root_entry_gtd_creates_is_told_apart_in_json_and_audit(repo):
    """--json: the decision event keeps decided_by "saved rule" (the config allows the file) and adds why gtd
    created it; the audit records the same."""
    script = repo.parent / "script.json"
    script.write_text(json.dumps({"build": [{"actions": [{"write": {"path": "count.py", "content": "x = 1\n"}}]}]}))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(script)}))
    (repo / "TODO.md").write_text("# Count\n\n## Action items\n- [ ] Add count.py\n")
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "configure gtd", cwd=repo)
    r = subprocess.run([sys.executable, str(HARNESS), "--", str(GTD), "build", "--json"], cwd=repo,
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=180)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    events = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    decisions = [e for e in events if e["event"] == "decision"]
    why = "the Landlock backend cannot let the agent add entries to the workspace root"
    assert [(d["target"], d["decided_by"], d.get("created_by_gtd")) for d in decisions] == \
        [(str(repo / "count.py"), "saved rule", why)], decisions
    assert (repo / "count.py").read_text() == "x = 1\n"
    audit = json.loads(subprocess.run([str(GTD), "audit", "--json"], cwd=repo, capture_output=True, text=True).stdout)
    assert [e.get("created_by_gtd") for e in audit if e.get("event") == "escalation_decision"] == [why]


# -- the write watch: refused writes the command kept quiet about (docs/refusal-detection.md) ----------

SILENT = ("touch ~/.bashrc-x 2>/dev/null; python3 -c 'open(\"/etc/gtd-y\", \"w\")' 2>/dev/null; "
          "(echo > /etc/gtd-w) 2>/dev/null; mkdir /usr/gtd-d 2>/dev/null; echo done")
# Writes Landlock lets through, or that fail before Landlock is asked (EEXIST, ENOENT), or that the policy
# allows: none may be reported by the watch.
ALLOWED = ("echo > /dev/null; mkdir -p \"$PWD/src\"; rm -f ../missing.txt; echo x > src/ok.txt; mkdir -p src/d/e; mv src/ok.txt src/d/; rm src/d/ok.txt; "
           "rmdir src/d/e; touch $TMPDIR/t; ln -s /etc $TMPDIR/l; echo > README.md; "
           "python3 -c 'import os; os.utime(\"../outside.txt\")'; python3 -c 'open(\"/etc/hostname\").read()'; "
           ": > /dev/stderr; echo done")


@pytest.mark.parametrize("launcher", ["native", "python"])
def test_the_write_watch_sees_refusals_the_command_kept_quiet_about(sandbox, repo, home, launcher, monkeypatch):
    """No read-only mount here (EROFS): the watch counts as refused what Landlock's rules refuse (EACCES)."""
    import gtd.sandbox.linux.nativelaunch as nativelaunch

    if launcher == "python":
        monkeypatch.setattr(nativelaunch, "launcher_path", lambda **kw: None)
    elif nativelaunch.launcher_path() is None:
        pytest.skip("no C compiler here: only the Python launcher can run")
    s = sandbox(Level.READWRITE, config=landlock())
    r = sh(s, SILENT, repo)
    assert r.returncode == 0 and r.out == "done\n" and r.err == "", r.err
    writes = sorted(v.target for v in s.violations if v.kind == "write")
    assert writes == sorted([str(home / ".bashrc-x"), "/etc/gtd-w", "/etc/gtd-y", "/usr/gtd-d"]), writes
    assert all("not writable at level readwrite" in v.detail for v in s.violations)


def test_the_write_watch_reports_nothing_landlock_lets_through(sandbox, repo):
    """utime is metadata, which Landlock does not cover: it succeeds outside the writable paths too."""
    (repo / "src").mkdir()
    (repo.parent / "outside.txt").write_text("")
    s = sandbox(Level.READWRITE, config=landlock())
    r = sh(s, ALLOWED, repo)
    assert r.returncode == 0 and r.out == "done\n" and r.err == "", r.err
    assert s.violations == []


def test_the_write_watch_follows_landlock_rules_on_single_files_and_links(sandbox, repo):
    """At plan only TODO.md is writable (a rule on the file itself); a link into a writable dir leads out of it."""
    from gtd.config.levels import Phase

    s = sandbox(Level.READONLY, config=landlock(), phase=Phase.PLAN)
    r = sh(s, "echo '# plan' > TODO.md; (echo x > README.md) 2>/dev/null; rm README.md 2>/dev/null; echo done", repo)
    assert r.out == "done\n" and (repo / "TODO.md").read_text() == "# plan\n", r.out + r.err
    assert sorted(v.target for v in s.violations) == [str(repo / "README.md")], s.violations
    (repo / "src").mkdir()
    (repo / "src/etc").symlink_to("/etc")
    s = sandbox(Level.READWRITE, config=landlock())
    r = sh(s, "(echo x > src/etc/gtd-l) 2>/dev/null; echo x > src/kept; echo done", repo)
    assert r.out == "done\n" and (repo / "src/kept").exists(), r.out + r.err
    assert [v.target for v in s.violations] == ["/etc/gtd-l"], s.violations  # what Landlock refused, resolved


def test_without_namespaces_sandbox_run_shows_and_audits_a_swallowed_refusal(repo, home):
    command = "touch ~/.bashrc-x 2>/dev/null; (echo > /etc/gtd-x) 2>/dev/null; echo done"
    r = gtd_without_namespaces(["sandbox", "run", "--level", "readwrite", "--", "sh", "-c", command], repo)
    assert r.returncode == 0 and r.stdout == "done\n", r.stderr
    assert "Landlock backend" in r.stderr
    refused = [line for line in r.stderr.splitlines() if line.startswith("gtd sandbox: refused write")]
    assert len(refused) == 2 and any("/etc/gtd-x (not writable at level readwrite" in line for line in refused), r.stderr
    audit = json.loads(subprocess.run([str(GTD), "audit", "--json"], cwd=repo, capture_output=True, text=True).stdout)
    targets = [e["target"] for e in audit if e.get("event") == "violation"]
    assert "/etc/gtd-x" in targets and str(home / ".bashrc-x") in targets, audit
