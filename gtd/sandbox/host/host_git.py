"""Host git runs on a workspace the agent could have changed: the host's own git (never one from the
repository's PATH directories), no hooks or fsmonitor, FIFOs and sockets swept out first, every run
bounded. The workflow's git-as-state steps (gtd.workflow.git) and the approval commit build on it."""

from __future__ import annotations

import os
import subprocess
from contextlib import contextmanager
from pathlib import Path

from gtd.errors import GtdError

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Iterator

# Used when the repository has no identity configured (fresh CI machines, temp demo repos).
FALLBACK_IDENTITY = {"GIT_AUTHOR_NAME": "gtd", "GIT_AUTHOR_EMAIL": "gtd@localhost",
                     "GIT_COMMITTER_NAME": "gtd", "GIT_COMMITTER_EMAIL": "gtd@localhost"}


# Paths gtd hands to git are file names (the agent's among them), never pathspecs: each such command
# runs with --literal-pathspecs, so a name like `:!x` (magic: everything but x) or `*` means itself.

# gtd's own commits never run repository hooks: hooks (husky, pre-commit, ...) execute scripts and
# config the agent could have edited in the work tree, which would run them outside the sandbox.
# Nor an fsmonitor command (run by every status/add, also in nested repositories: `-c` reaches the
# child gits): belt and braces behind the sandbox's quarantine of planted git metadata.
NO_HOOKS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


# git's output holds file names and messages as bytes: one that is not UTF-8 (the agent can name a file
# so) is read as the file system reads it (lone surrogates, surrogateescape), so it is no crash, still
# names the same file when handed back to git, and terminal_text shows its bytes instead of writing them.
OUTPUT = {"encoding": "utf-8", "errors": "surrogateescape"}


_PROGRAMS: dict[Path, str] = {}  # the host's git per repository, found once per process

# Every host git run ends within this: a run that waits (on something in the work tree gtd did not catch,
# a lock) is stopped and named in a GtdError, never a hang of gtd (headless runs included).
TIMEOUT_SECONDS = 300.0


def _timed_out(args: tuple[str, ...] | list[str], timeout: float | None = None) -> GtdError:
    timeout = TIMEOUT_SECONDS if timeout is None else timeout
    return GtdError(f"git {' '.join(args)} did not finish within {timeout:g} s and was stopped; "
                    f"something in the work tree or the repository made it wait (run it yourself to see what, "
                    f"and please report it to gtd)")


def _run(repo: Path, args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run of a host git command (`args` after git's argv head), bounded by TIMEOUT_SECONDS."""
    try:
        return subprocess.run([*_host_git(repo), *args], cwd=repo, timeout=TIMEOUT_SECONDS,
                              env=_host_env(repo, kwargs.pop("env", None)), **kwargs)
    except subprocess.TimeoutExpired:
        raise _timed_out(args) from None


def _host_git(repo: Path) -> list[str]:
    """git's argv head: the host's own git, never one from a PATH directory in the repository (an activated
    project venv: the agent writes it), and the options every run of gtd's takes. FIFOs, sockets and device
    nodes the agent left in the work tree are moved out first: git would wait on one for ever."""
    from gtd.sandbox.host import special_files

    special_files.sweep(repo)
    if repo not in _PROGRAMS:
        from gtd.host_programs import host_program

        found = host_program("git", [repo])
        if found is None:
            raise GtdError("git not found on PATH (directories inside the repository are not searched)")
        _PROGRAMS[repo] = found
    return [_PROGRAMS[repo], *NO_HOOKS]


def _host_env(repo: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a host git run: PATH without the repository's directories (git starts its
    helpers and pager by name)."""
    from gtd.host_programs import host_environment

    return host_environment([repo], {**os.environ, **(env or {})})


class Running:
    """A git run started and read later (`start`): gtd's other work, or another git run, goes on meanwhile."""

    def __init__(self, repo: Path, args: tuple[str, ...], env: dict[str, str] | None = None):
        self.args = args
        self._process = subprocess.Popen([*_host_git(repo), *args], cwd=repo, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, **OUTPUT, env=_host_env(repo, env))

    def output(self, check: bool = True, timeout: float | None = None) -> str:
        """Its stdout, once it ended; GtdError when it failed and `check`, or ran past `timeout`. Interrupted
        (Ctrl-C), it is killed (as subprocess.run does)."""
        timeout = TIMEOUT_SECONDS if timeout is None else timeout
        try:
            stdout, stderr = self._process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
            raise _timed_out(self.args, timeout) from None
        except BaseException:
            self._process.kill()
            self._process.wait()
            raise
        if check and self._process.returncode != 0:
            raise GtdError(f"git {' '.join(self.args)} failed: {stderr.strip() or stdout.strip()}")
        return stdout


def start(repo: Path, *args: str, env: dict[str, str] | None = None) -> Running:
    return Running(repo, args, env)


def git(repo: Path, *args: str, check: bool = True, env: dict[str, str] | None = None,
        timeout: float | None = None) -> str:
    return start(repo, *args, env=env).output(check, timeout)


_IDENTITIES: dict[Path, dict[str, str] | Running] = {}  # asked once per repository and process (gtd never sets one)


def _ask_identity(repo: Path) -> None:
    """Start asking whether the person has an identity for this repository (the first commit's `git add`
    runs meanwhile)."""
    if repo not in _IDENTITIES:
        _IDENTITIES[repo] = start(repo, "config", "user.email")


def _identity_env(repo: Path) -> dict[str, str]:
    _ask_identity(repo)
    asked = _IDENTITIES[repo]
    if isinstance(asked, Running):
        asked = _IDENTITIES[repo] = {} if asked.output(check=False).strip() else FALLBACK_IDENTITY
    return asked


@contextmanager
def temporary_index() -> Iterator[dict[str, str]]:
    """The environment for git commands that must leave the real index alone: a throw-away index
    file (not yet created; git makes it), removed afterwards."""
    import tempfile  # here: `gtd status` never needs one

    fd, index = tempfile.mkstemp(prefix="gtd-index-")
    os.close(fd)
    os.unlink(index)
    try:
        yield {"GIT_INDEX_FILE": index}
    finally:
        for leftover in (index, index + ".lock"):  # a git run killed at its timeout leaves its lock
            if os.path.exists(leftover):
                os.unlink(leftover)


def _message(text: str) -> str:
    """A commit message as gtd writes it: its parts come from the agent (a TODO item's title, a file
    name) and `git log` prints it as it is, so control characters, bidi controls and non-UTF-8 bytes
    (lone surrogates) are written as visible escapes, never into history raw."""
    from gtd.terminal_text import visible

    return visible(text)


def commit_file_text(repo: Path, path: str, text: str, message: str) -> str | None:
    """Commit one file with exactly this content, whatever the work tree or the index hold: the
    person's own uncommitted edits to the file stay uncommitted (in the work tree) and out of it."""
    message = _message(message)
    blob = _run(repo, ["hash-object", "-w", "--stdin", "--path", path], input=text,
                capture_output=True, text=True, check=True).stdout.strip()
    with temporary_index() as index_env:
        env = {**index_env, **_identity_env(repo)}
        parent = git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False).strip()
        if parent:
            git(repo, "read-tree", parent, env=env)
        git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
        tree = git(repo, "write-tree", env=env).strip()
        if parent and tree == git(repo, "rev-parse", f"{parent}^{{tree}}").strip():
            return None
        sha = _run(repo, ["commit-tree", tree, *(["-p", parent] if parent else []), "-F", "-"],
                   input=message, capture_output=True, text=True, check=True, env=env).stdout.strip()
    git(repo, "update-ref", "-m", f"gtd: {message.splitlines()[0]}", "HEAD", sha, *([parent] if parent else []))
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")  # the index agrees with the commit
    return sha
