"""`gtd sandbox explain` / `gtd sandbox run` through the real command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sandbox_support import requires_bwrap


def gtd_sandbox(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gtd", "sandbox", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def test_explain_json_for_a_phase(repo):
    (repo / ".gtdrc.json").write_text('{"provider": "scripted"}')  # no provider state dirs in the policy
    r = gtd_sandbox("explain", "--phase", "plan", "--json", cwd=repo)
    data = json.loads(r.stdout)
    assert data["level"] == "readonly" and data["sandboxed"] is True
    assert data["writable"] == [str(repo / "TODO.md")]
    assert str(repo / ".git") in data["protected"]  # the whole git dir


def test_explain_lists_the_protected_paths_that_exist_and_counts_the_rest(repo):
    """~300 protected names (hook managers, editors, shells) would bury the policy: those absent now are
    counted, and listed with --all."""
    (repo / ".husky").mkdir()
    short = gtd_sandbox("explain", "--phase", "build", cwd=repo)
    assert f"  {repo / '.git'}\n" in short.stdout and f"  {repo / '.husky'}\n" in short.stdout
    assert f"  {repo / '.lefthook.yml'}\n" not in short.stdout
    assert "more that do not exist now (the same rule if one is created; --all lists them)" in short.stdout
    full = gtd_sandbox("explain", "--phase", "build", "--all", cwd=repo)
    assert f"  {repo / '.lefthook.yml'}\n" in full.stdout and "do not exist now" not in full.stdout
    assert len(short.stdout.splitlines()) * 3 < len(full.stdout.splitlines())


def test_explain_full_says_unsandboxed(repo):
    r = gtd_sandbox("explain", "--level", "full", cwd=repo)
    assert "NOT SANDBOXED" in r.stdout


@requires_bwrap
@pytest.mark.bwrap
def test_run_passes_exit_status_and_reports_refusals(repo):
    r = gtd_sandbox("run", "--level", "readwrite", "--", "sh", "-c", "echo made > made.txt; exit 7", cwd=repo)
    assert r.returncode == 7
    assert (repo / "made.txt").read_text() == "made\n"


@requires_bwrap
@pytest.mark.bwrap
def test_run_headless_refusal_exits_4_with_the_pending_request(repo):
    r = gtd_sandbox("run", "--level", "readwrite", "--", "sh", "-c",
                    "curl -s --max-time 5 https://example.com; exit 7", cwd=repo)
    assert r.returncode == 4
    assert "refused network example.com:443 (not approved" in r.stderr  # the reason, on screen
    assert "see `gtd sandbox why example.com:443 --level readwrite`" in r.stderr  # at the level that refused it
    assert r.stdout == ""  # the command's stdout stays the command's
    payload = json.loads(r.stderr.splitlines()[-1])
    assert payload["requests"][0]["target"] == "example.com:443" and payload["commandExitCode"] == 7


@requires_bwrap
@pytest.mark.bwrap
def test_run_pending_json_file_keeps_stdout_clean_and_the_commands_exit_code(repo, tmp_path):
    out = tmp_path / "pending.json"
    r = gtd_sandbox("run", "--pending-json", str(out), "--level", "readwrite", "--", "sh", "-c",
                    "echo COMMAND-OUTPUT; curl -s --max-time 5 https://example.com; exit 7", cwd=repo)
    assert (r.returncode, r.stdout) == (7, "COMMAND-OUTPUT\n")
    payload = json.loads(out.read_text())
    assert payload["status"] == "escalation_pending" and payload["commandExitCode"] == 7
    assert [q["target"] for q in payload["requests"]] == ["example.com:443"]
    r = gtd_sandbox("run", "--pending-json", str(out), "--level", "readwrite", "--", "true", cwd=repo)
    assert r.returncode == 0 and json.loads(out.read_text()) == {"status": "ok", "requests": [], "commandExitCode": 0}


@requires_bwrap
@pytest.mark.bwrap
def test_run_reports_and_audits_a_refused_write(repo):
    r = gtd_sandbox("run", "--level", "readwrite", "--", "sh", "-c",
                    "echo x > .git/hooks/pre-commit; echo y > allowed.txt; exit 3", cwd=repo)
    assert r.returncode == 3 and (repo / "allowed.txt").exists()
    hook = repo / ".git/hooks/pre-commit"
    assert f"gtd sandbox: refused write {hook} (protected:" in r.stderr
    audit = subprocess.run([sys.executable, "-m", "gtd", "audit", "--json"], cwd=repo, capture_output=True, text=True)
    entries = json.loads(audit.stdout)
    assert any(e.get("event") == "violation" and e.get("kind") == "write" and e.get("target") == str(hook) for e in entries), audit.stdout


@requires_bwrap
@pytest.mark.bwrap
def test_run_readonly_blocks_writes(repo):
    r = gtd_sandbox("run", "--level", "readonly", "--", "sh", "-c", "echo x > f", cwd=repo)
    assert r.returncode != 0 and not (repo / "f").exists()


@requires_bwrap
@pytest.mark.bwrap
def test_variables_named_in_pass_env_reach_the_command_and_no_others(repo, home, monkeypatch):
    """`NODE_ENV=test gtd sandbox run -- npm test`: the sandbox starts from a minimal environment, so a
    test's own variables need sandbox.passEnv; a project file's entries count once trusted, gtd's own
    variables (the proxy, HOME) stay gtd's, and unlisted ones (a token) stay out."""
    monkeypatch.setenv("NODE_ENV", "test")
    monkeypatch.setenv("DATABASE_URL", "postgres://localhost/app")
    monkeypatch.setenv("GITHUB_TOKEN", "SECRET-TOKEN")
    monkeypatch.setenv("HTTPS_PROXY", "http://elsewhere.test:1")
    show = ["run", "--", "sh", "-c", 'echo "NODE_ENV=$NODE_ENV DB=$DATABASE_URL TOKEN=$GITHUB_TOKEN PROXY=$HTTPS_PROXY"']
    before = gtd_sandbox(*show, cwd=repo)
    assert before.stdout.startswith("NODE_ENV= DB= TOKEN= PROXY=http://gtd:"), before.stdout + before.stderr
    (home / ".config" / "gtd").mkdir(parents=True)
    (home / ".config" / "gtd" / "config.toml").write_text('[sandbox]\npassEnv = ["NODE_ENV", "HTTPS_PROXY"]\n')
    (repo / ".gtdrc.json").write_text('{"sandbox": {"passEnv": ["DATABASE_URL"]}}')
    untrusted = gtd_sandbox(*show, cwd=repo)
    assert untrusted.stdout.startswith("NODE_ENV=test DB= TOKEN= PROXY=http://gtd:"), untrusted.stdout
    assert "sandbox.passEnv: DATABASE_URL" in untrusted.stderr  # named as ignored until trusted
    assert subprocess.run([sys.executable, "-m", "gtd", "trust"], cwd=repo, capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=60).returncode == 0
    trusted = gtd_sandbox(*show, cwd=repo)
    assert trusted.stdout.startswith("NODE_ENV=test DB=postgres://localhost/app TOKEN= PROXY=http://gtd:"), trusted.stdout
    explained = gtd_sandbox("explain", cwd=repo)
    assert "  NODE_ENV (from sandbox.passEnv)\n" in explained.stdout


def test_git_commit_under_sandbox_run_is_refused_with_advice_for_the_person(repo):
    """`gtd sandbox run -- git commit`: no workflow step commits afterwards, so the one line says to run git
    on the host (a workflow step's says gtd commits after it: test_redteam)."""
    r = gtd_sandbox("run", "--level", "readwrite", "--", "sh", "-c", "echo new > n.txt; git add n.txt", cwd=repo)
    assert r.returncode == 1, r.stderr
    assert "'git add' is not available" in r.stderr and "run it on the host once the command is done" in r.stderr


@requires_bwrap
@pytest.mark.bwrap
def test_the_why_command_a_refusal_suggests_quotes_the_commands_path(repo):
    """The refused path is the command's choice: pasted into a shell, the suggested command keeps it one argument."""
    r = gtd_sandbox("run", "--level", "readwrite", "--", "sh", "-c", "touch '/home/x$(id);y'", cwd=repo)
    assert "see `gtd sandbox why '/home/x$(id);y' --level readwrite`" in r.stderr, r.stderr


@requires_bwrap
@pytest.mark.bwrap
def test_a_retried_refusal_is_one_line_and_a_count(repo):
    """Issue 24: a client retrying a refused host (pip: 6 tries an URL) made one line per try."""
    r = gtd_sandbox("run", "--level", "readwrite", "--", "sh", "-c",
                    "for i in 1 2 3 4 5; do curl -s --max-time 5 https://example.com; done; echo done", cwd=repo)
    assert r.returncode == 4 and r.stdout == "done\n", r.stderr
    assert r.stderr.count("refused network example.com:443") == 2, r.stderr
    assert "refused network example.com:443 (not approved); see `gtd sandbox why" in r.stderr
    assert "refused network example.com:443 4 more time(s), 5 in all (retried: shown once)" in r.stderr


@requires_bwrap
@pytest.mark.bwrap
def test_a_refused_direct_https_connection_gets_an_access_denied_alert_not_a_reset(repo):
    """A client that ignores the proxy variables: its TLS handshake is answered with a fatal access_denied
    alert, which clients report as "access denied" and do not retry (a reset reads as a flaky network)."""
    r = gtd_sandbox("run", "--level", "readwrite", "--", "curl", "-sS", "--noproxy", "*", "--max-time", "10",
                    "https://example.com/", cwd=repo)
    assert "tlsv1 alert access denied" in r.stderr and "reset" not in r.stderr.lower(), r.stderr
    assert "refused network example.com:443" in r.stderr


@requires_bwrap
@pytest.mark.bwrap
def test_refused_writes_of_a_command_that_exits_0_are_shown_and_audited(repo):
    """Issue 24: `touch ~/.bashrc-x; echo > /etc/x; echo done` exits 0: both refusals were invisible."""
    from gtd.audit import AuditLog

    r = gtd_sandbox("run", "--", "sh", "-c", "touch ~/.bashrc-x; echo > /etc/x; echo done", cwd=repo)
    assert (r.returncode, r.stdout) == (0, "done\n"), r.stderr
    home_file = os.path.join(os.environ["HOME"], ".bashrc-x")
    for target in (home_file, "/etc/x"):
        assert f"gtd sandbox: refused write {target} (" in r.stderr, r.stderr
    refused = [e["target"] for e in AuditLog(repo).read() if e["event"] == "violation"]
    assert refused == [home_file, "/etc/x"]
    assert not os.path.exists(home_file)


@requires_bwrap
@pytest.mark.parametrize("where", ["home", "tmp"])
def test_a_writable_run_outside_a_repository_in_a_shared_directory_is_refused(where, home, tmp_path):
    # Outside a repository the current directory is the workspace: in /tmp or HOME other programs create
    # repositories meanwhile, and the run's git guard would quarantine their `.git` as planted by the command.
    import tempfile

    shared = home if where == "home" else tempfile.gettempdir()
    marker = tmp_path / "ran"
    r = gtd_sandbox("run", "--level", "readwrite", "--", "touch", str(marker), cwd=shared)
    assert r.returncode == 2, r.stderr
    assert "is shared with other programs" in r.stderr and "cd into a project directory" in r.stderr
    assert not marker.exists()
    project = tmp_path / "project"  # a directory of its own, repository or not, runs
    project.mkdir()
    assert gtd_sandbox("run", "--level", "readwrite", "--", "true", cwd=project).returncode == 0
    assert gtd_sandbox("run", "-C", str(project), "--level", "readwrite", "--", "true", cwd=shared).returncode == 0
