"""HOME hidden by default, with an allow-list (issue 23): credential files of every class stay unreadable at
every level below full, while toolchains, PATH installs, caches, git settings and sandbox.readPaths stay
usable. Real bwrap."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level
from sandbox_support import sh

# One file per credential class the issue lists (a directory's file where the tool keeps a directory).
CREDENTIALS = (
    ".config/opencode/opencode.json", ".local/share/opencode/auth.json", ".pi/agent/auth.json", ".codex/auth.json",
    ".gemini/oauth_creds.json", ".claude.json", ".claude/.credentials.json", ".config/github-copilot/hosts.json",
    ".config/github-copilot/apps.json", ".config/glab-cli/config.yml", ".config/tea/config.yml",
    ".wrangler/config/default.toml", ".vercel/auth.json", ".netlify/config.json", ".config/hcloud/cli.toml",
    ".databrickscfg", ".config/stripe/config.toml", ".config/configstore/firebase-tools.json", ".cargo/config.toml",
    ".gemrc", ".bundle/config", ".nuget/NuGet/NuGet.Config", ".gradle/init.d/x.gradle", ".condarc", ".sh_history",
    ".local/share/fish/fish_history", ".config/zsh/.zsh_history", ".local/share/atuin/key", ".claude/projects/x.jsonl",
    ".local/share/opencode/storage/session/s.json", ".pi/agent/sessions/s.jsonl", ".codex/sessions/s.jsonl",
    ".Xauthority", ".config/Slack/x", ".config/discord/x", "snap/firefox/common/.mozilla/x",
    ".m2/settings.xml", ".yarnrc", ".aws/config", ".ssh/id_ed25519",
)
TOKEN = "SECRET-TOKEN-d41d8cd9"


def _plant(home: Path, names) -> None:
    for name in names:
        path = home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{TOKEN} {name}\n")


def _readable(session, home: Path, repo: Path, names) -> list[str]:
    """The names a command inside can read (cat, and a search of all of HOME for the token)."""
    script = "; ".join(f"cat {home / n} 2>/dev/null" for n in names)
    script += f"; grep -rs {TOKEN} {home} 2>/dev/null; true"
    r = sh(session, script, repo, timeout=60)
    return sorted({line.split(TOKEN)[1].split()[0] if " " in line.split(TOKEN)[1] else line
                   for line in r.out.splitlines() if TOKEN in line})


@pytest.mark.parametrize("level", [Level.READONLY, Level.READWRITE, Level.NETWORK])
def test_no_credential_class_is_readable_below_full(sandbox, home, repo, level):
    _plant(home, CREDENTIALS)
    s = sandbox(level)
    assert _readable(s, home, repo, CREDENTIALS) == []
    r = sh(s, f"ls -A {home}", repo)  # not even their names: only the git config and package caches are there
    assert not {".ssh", ".aws", ".config", ".claude", ".claude.json", ".pi", ".codex", ".Xauthority", "snap",
                ".local"} & set(r.out.split()), r.out


def test_toolchains_path_installs_and_user_site_stay_usable(sandbox, home, repo, monkeypatch):
    # A toolchain dir, cargo's bin (but not its config), a PATH dir whose prefix is a tool's own, and ~/.local/bin
    # (a mixed prefix) with a program linked from its install root elsewhere in HOME.
    (home / ".rustup/toolchains/stable/bin").mkdir(parents=True)
    (home / ".rustup/toolchains/stable/bin/rustc").write_text("rustc\n")
    cargo_bin = home / ".cargo/bin"
    cargo_bin.mkdir(parents=True)
    (cargo_bin / "cargo-tool").write_text("#!/bin/sh\necho CARGO-TOOL\n")
    (cargo_bin / "cargo-tool").chmod(0o755)
    (home / ".cargo/config.toml").write_text(f"[registry]\ntoken = '{TOKEN}'\n")
    install = home / ".local/share/mytool/1.0"
    (install / "bin").mkdir(parents=True)
    (install / "lib.txt").write_text("MYTOOL-LIB\n")
    (install / "bin/mytool").write_text(f"#!/bin/sh\ncat {install}/lib.txt\n")
    (install / "bin/mytool").chmod(0o755)
    local_bin = home / ".local/bin"
    local_bin.mkdir(parents=True)
    (local_bin / "mytool").symlink_to(install / "bin/mytool")
    (home / ".local/share/other/secret.txt").parent.mkdir(parents=True)
    (home / ".local/share/other/secret.txt").write_text(TOKEN)
    site = home / ".local/lib/python3.99/site-packages"
    site.mkdir(parents=True)
    (site / "usermod.py").write_text("X = 'USER-SITE'\n")
    tools = home / "opt/node/bin"  # a PATH entry whose prefix is its own dir: the prefix is shown
    tools.mkdir(parents=True)
    (tools.parent / "lib").mkdir()
    (tools.parent / "lib/node.txt").write_text("NODE-LIB\n")
    monkeypatch.setenv("PATH", f"{cargo_bin}:{local_bin}:{tools}:{os.environ['PATH']}")
    s = sandbox(Level.READONLY)
    r = sh(s, f"cat {home}/.rustup/toolchains/stable/bin/rustc; cargo-tool; mytool; cat {tools.parent}/lib/node.txt; "
              f"cat {site}/usermod.py; cat {home}/.cargo/config.toml {home}/.local/share/other/secret.txt", repo)
    assert r.out.split("\n")[:5] == ["rustc", "CARGO-TOOL", "MYTOOL-LIB", "NODE-LIB", "X = 'USER-SITE'"], r.out + r.err
    assert TOKEN not in r.out


def test_a_link_the_agent_can_write_never_extends_the_list(sandbox, home, repo, monkeypatch):
    """A PATH entry inside the workspace (an activated venv) is the agent's: its links are not followed."""
    (home / ".config/secretapp").mkdir(parents=True)
    (home / ".config/secretapp/token").write_text(TOKEN)
    venv_bin = repo / ".venv/bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "tool").symlink_to(home / ".config/secretapp/token")
    monkeypatch.setenv("PATH", f"{venv_bin}:{os.environ['PATH']}")
    s = sandbox(Level.READWRITE)
    r = sh(s, f"cat {home}/.config/secretapp/token; cat .venv/bin/tool", repo)
    assert TOKEN not in r.out
    assert not any(str(p).startswith(str(home / ".config")) for p, _ in s.policy.home_visible)


def test_git_config_inside_keeps_settings_and_drops_credentials(sandbox, home, repo):
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Ann\n\temail = ann@example.com\n[alias]\n\tst = status\n"
        f"[credential]\n\thelper = store\n[http]\n\textraHeader = Authorization: Bearer {TOKEN}\n"
        f"[url \"https://x-access-token:{TOKEN}@github.com/\"]\n\tinsteadOf = https://github.com/\n"
        "[url \"git@github.com:\"]\n\tpushInsteadOf = https://github.com/\n"
        "[include]\n\tpath = ~/.gitconfig.local\n[core]\n\tautocrlf = input\n\thooksPath = ~/hooks\n")
    (home / ".gitconfig.local").write_text(f"[user]\n\tsigningkey = {TOKEN}\n")
    s = sandbox(Level.READONLY)
    r = sh(s, "git config --global --list", repo)
    listed = r.out.splitlines()
    assert {"user.name=Ann", "user.email=ann@example.com", "alias.st=status", "core.autocrlf=input",
            "url.git@github.com:.pushinsteadof=https://github.com/"} <= set(listed), r.out + r.err
    assert TOKEN not in r.out and not any(k.startswith(("credential.", "http.", "include.", "core.hookspath"))
                                          for k in listed), r.out
    assert sh(s, "git log --oneline | wc -l", repo).out.strip() == "1"  # git works in the workspace


def test_read_paths_from_user_config_show_a_file_and_never_a_secret(sandbox, home, repo):
    (home / ".config/mytool").mkdir(parents=True)
    (home / ".config/mytool/settings").write_text("MYTOOL-SETTINGS\n")
    (home / ".ssh").mkdir()
    (home / ".ssh/id_rsa").write_text(TOKEN)
    config = GtdConfig.model_validate({"sandbox": {"readPaths": ["~/.config/mytool", "~/.ssh/id_rsa"]}})
    s = sandbox(Level.READONLY, config=config)
    r = sh(s, f"cat {home}/.config/mytool/settings {home}/.ssh/id_rsa", repo)
    assert "MYTOOL-SETTINGS" in r.out and TOKEN not in r.out
    assert (home / ".config/mytool", "sandbox.readPaths") in s.policy.home_visible


def test_read_paths_in_a_project_file_count_only_after_trust(home, repo):
    from gtd.config.loader import load_config
    from gtd.escalation.trust import TrustStore, filter_untrusted_project

    (repo / ".gtdrc.json").write_text('{"sandbox": {"readPaths": ["~/.config/mytool"]}}\n')
    loaded = load_config(repo, project_filter=filter_untrusted_project)
    assert loaded.config.sandbox.read_paths == []
    assert any("sandbox.readPaths: ~/.config/mytool" in w for w in loaded.warnings), loaded.warnings
    TrustStore().trust(repo / ".gtdrc.json")
    assert load_config(repo, project_filter=filter_untrusted_project).config.sandbox.read_paths == ["~/.config/mytool"]


def test_other_homes_and_service_state_are_hidden(sandbox, home, repo):
    s = sandbox(Level.READWRITE)
    areas = [p for p, _ in s.policy.hidden_areas]
    if not areas:
        pytest.skip("no other user's home or service state on this machine")
    r = sh(s, "; ".join(f"ls -A {p} | wc -l" for p in areas), repo)
    assert r.out.split() == ["0"] * len(areas), r.out + r.err


def test_explain_lists_the_allow_list_and_why_names_read_paths(home, repo):
    (home / ".rustup").mkdir()
    env = {**os.environ, "HOME": str(home)}
    explain = subprocess.run([sys.executable, "-m", "gtd", "sandbox", "explain"], cwd=repo, env=env,
                             capture_output=True, text=True, timeout=60)
    assert f"{home}/.rustup (rustup's toolchains)" in explain.stdout, explain.stdout + explain.stderr
    assert "HOME is hidden" in explain.stdout and "hidden outside HOME:" in explain.stdout
    why = subprocess.run([sys.executable, "-m", "gtd", "sandbox", "why", "~/.aws/config"], cwd=repo, env=env,
                         capture_output=True, text=True, timeout=60)
    assert "HOME is hidden" in why.stdout and "sandbox.readPaths" in why.stdout, why.stdout + why.stderr


def test_a_command_failing_on_a_hidden_home_file_gets_one_hint(home, repo):
    (home / ".config/mytool").mkdir(parents=True)
    (home / ".config/mytool/settings").write_text("x\n")
    env = {**os.environ, "HOME": str(home)}
    r = subprocess.run([sys.executable, "-m", "gtd", "sandbox", "run", "--", "cat", f"{home}/.config/mytool/settings"],
                       cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    hints = [line for line in r.stderr.splitlines() if "[gtd] hint:" in line]
    assert len(hints) == 1 and "sandbox.readPaths" in hints[0] and "mytool/settings" in hints[0], r.stderr


def test_the_remembered_list_follows_new_toolchains_and_links(home, repo, monkeypatch):
    """The list is kept in gtd's state dir between starts (a `gtd sandbox run` is a new process each time), and
    is worked out again when a toolchain, or a program linked from a PATH dir, is installed."""
    from gtd import paths
    from gtd.sandbox.policy.sandbox_policy import build_policy

    local_bin = home / ".local/bin"
    local_bin.mkdir(parents=True)
    monkeypatch.setenv("PATH", f"{local_bin}:{os.environ['PATH']}")

    def shown():
        policy = build_policy(GtdConfig(), workspace=repo, level=Level.READONLY, home=home)
        return [p for p, _ in policy.home_visible]

    assert home / ".nvm" not in shown()
    assert list((paths.user_state_dir() / "cache" / "home-allow").glob("*.json"))  # remembered
    (home / ".nvm/versions").mkdir(parents=True)
    assert home / ".nvm" in shown()
    install = home / ".local/share/tool/2.0"
    (install / "bin").mkdir(parents=True)
    (install / "bin/tool").write_text("#!/bin/sh\n")
    (local_bin / "tool").symlink_to(install / "bin/tool")
    assert install in shown()


def test_cargo_config_inside_keeps_sources_and_drops_tokens(sandbox, home, repo):
    (home / ".cargo").mkdir()
    (home / ".cargo/config.toml").write_text(
        f'[registry]\ntoken = "{TOKEN}"\ndefault = "mine"\n[registries.mine]\nindex = "sparse+https://u:{TOKEN}@r.example/"\n'
        f'token = "{TOKEN}"\n[source.crates-io]\nreplace-with = "mine"\n[env]\nAPI = "{TOKEN}"\n'
        '[net]\ngit-fetch-with-cli = true\n')
    s = sandbox(Level.READONLY)
    r = sh(s, f"cat {home}/.cargo/config.toml", repo)
    assert TOKEN not in r.out and "API" not in r.out, r.out
    assert 'replace-with = "mine"' in r.out and "sparse+https://r.example/" in r.out and 'default = "mine"' in r.out
    assert "git-fetch-with-cli = true" in r.out, r.out
