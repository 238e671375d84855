"""The git config the sandbox sees at ~/.gitconfig: written by gtd, holding only safe keys of the person's.

HOME is hidden inside the sandbox (home_allow.py), and the person's global git config may carry
credentials (`credential.helper`, `http.extraHeader: Authorization ...`, a token in a
`url.<base>.insteadOf` base, includes of other files). gtd asks git for the global settings (both
~/.gitconfig and $XDG_CONFIG_HOME/git/config, includes not followed) and writes back only keys on
an allow-list: identity, line endings, diff/merge/colour/alias/pull/push/rebase/fetch settings and
the like. Never `credential.*`, `http.*`, `include.*`/`includeIf.*`, signing keys, or an
`insteadOf` whose URL holds a user or password.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

# Whole sections whose keys are safe to copy.
SAFE_SECTIONS = ("alias", "color", "diff", "difftool", "merge", "mergetool", "pull", "push", "rebase", "fetch",
                 "advice", "status", "log", "format", "pretty", "branch", "rerere", "help", "grep", "blame",
                 "column", "interactive", "submodule", "filter", "am", "apply", "clone", "checkout", "index",
                 "pack", "gc", "feature", "protocol", "transfer", "receive", "tag", "versionsort", "safe",
                 "maintenance", "sequence", "worktree", "stash", "commit", "init", "user", "author", "committer")
# Keys of those sections that are not copied: signing needs keys that stay hidden (a commit would fail).
UNSAFE_KEYS = ("user.signingkey", "commit.gpgsign", "tag.gpgsign", "tag.forcesignannotated", "push.gpgsign",
               "commit.template")
SAFE_CORE = ("autocrlf", "eol", "quotepath", "safecrlf", "filemode", "ignorecase", "precomposeunicode",
             "longpaths", "whitespace", "symlinks", "abbrev", "compression", "checkstat", "trustctime",
             "untrackedcache", "fsmonitor", "preloadindex", "fscache", "editor", "pager")

HEADER = "# written by gtd: your global git settings, credentials and includes left out (docs/home-allow-list.md)\n"


def _has_credentials(url: str) -> bool:
    """A URL with a user (or user:password) part: `https://TOKEN@host/`, `https://u:p@host`. An scp-like
    `git@host:` names only the ssh user and is kept."""
    match = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)", url)
    return bool(match and "@" in match.group(1))


def safe_key(key: str, value: str) -> bool:
    """Whether `section[.subsection].name = value` may reach the sandbox."""
    lowered = key.lower()
    section, _, rest = lowered.partition(".")
    name = rest.rpartition(".")[2]
    if lowered in UNSAFE_KEYS:
        return False
    if section == "core":
        return "." not in rest and name in SAFE_CORE
    if section == "url":
        base = key[len("url."):].rpartition(".")[0]
        return name in ("insteadof", "pushinsteadof") and not _has_credentials(base) and not _has_credentials(value)
    if section in ("credential", "http", "https", "include", "includeif", "gpg", "sendemail", "lfs"):
        return False
    if section == "filter":
        return "lfs" in rest.split(".")[:1]  # filter.lfs.* (git-lfs's own commands); no other filter command
    return section in SAFE_SECTIONS


def _quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def render(items: list[tuple[str, str]]) -> str:
    """git config text for (key, value) pairs as `git config --list` names them."""
    sections: dict[tuple[str, str | None], list[tuple[str, str]]] = {}
    for key, value in items:
        section, _, rest = key.partition(".")
        sub, _, name = rest.rpartition(".")
        sections.setdefault((section, sub or None), []).append((name, value))
    out = [HEADER]
    for (section, sub), entries in sections.items():
        if sub is None:
            out.append(f"[{section}]\n")
        else:
            out.append(f"[{section} {_quote(sub)}]\n")
        out += [f"\t{name} = {_quote(value)}\n" for name, value in entries]
    return "".join(out)


def sandbox_git_config(home: Path) -> str:
    """The generated config for `home` ("" when git is missing or the person has no global config)."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path(home) / ".config")
    files = [os.environ.get("GIT_CONFIG_GLOBAL") or str(Path(home) / ".gitconfig"), os.path.join(xdg, "git", "config")]
    stamps = []
    for f in files:
        try:
            st = os.stat(f)
            stamps.append((f, st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            stamps.append((f, 0, 0, 0))
    from gtd.sandbox.policy.home_allow import persisted

    key = (str(home), xdg, os.environ.get("GIT_CONFIG_GLOBAL", ""))
    return persisted("git-config", key, files, lambda: _generated(*key, tuple(stamps)))


def _generated(home: str, xdg: str, global_file: str, _stamps: tuple) -> str:
    if all(st[1:] == (0, 0, 0) for st in _stamps):
        return HEADER  # nothing to read: no git run
    from gtd.host_programs import host_environment, host_program

    git = host_program("git")
    if git is None:
        return HEADER
    env = host_environment(base={**os.environ, "HOME": home, "XDG_CONFIG_HOME": xdg})
    if global_file:
        env["GIT_CONFIG_GLOBAL"] = global_file
    try:
        out = subprocess.run([git, "config", "--global", "--no-includes", "--list", "-z"], capture_output=True,
                             env=env, cwd="/", timeout=10).stdout.decode("utf-8", "surrogateescape")
    except (OSError, subprocess.TimeoutExpired):
        return HEADER
    items = []
    for record in out.split("\0"):
        key, sep, value = record.partition("\n")
        value = value if sep else "true"  # `[core] bare` without a value: a true boolean
        if key and safe_key(key, value) and not any("\udc80" <= c <= "\udcff" for c in key + value):
            items.append((key, value))
    return render(items)
