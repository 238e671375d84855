"""Git operations gtd performs itself, always outside the sandbox."""

from __future__ import annotations

from pathlib import Path

from gtd.errors import GtdError
from gtd.record import record
from gtd.sandbox.host.host_git import (  # noqa: F401 - the host git runs, used through this module too
    FALLBACK_IDENTITY,
    NO_HOOKS,
    OUTPUT,
    TIMEOUT_SECONDS,
    Running,
    _ask_identity,
    _host_env,
    _host_git,
    _identity_env,
    _message,
    _run,
    _timed_out,
    commit_file_text,
    git,
    start,
    temporary_index,
)


@record(frozen=True)
class Change:
    status: str  # two-letter porcelain code, e.g. " M", "??", "A "
    path: str


def changes(repo: Path) -> list[Change]:
    """Uncommitted changes, untracked files included (ignored files are not)."""
    out = git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    entries = out.split("\0")
    result, i = [], 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if not entry:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":  # renames carry the old path as the next entry
            i += 1
        result.append(Change(code, path))
    return result


def blob_at_head(repo: Path, path: str) -> bytes | None:
    """The file's bytes as HEAD holds them (no filter, no line-end conversion), None when HEAD has none."""
    done = _run(repo, ["cat-file", "blob", f"HEAD:{path}"], capture_output=True)
    return done.stdout if done.returncode == 0 else None


def has_commits(repo: Path) -> bool:
    return git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False).strip() != ""


def commit_all(repo: Path, message: str, *, allow_empty: bool = False, leave_out: list[str] | None = None) -> str | None:
    """Stage everything but `leave_out` and the files earlier steps left out (unsafe.left_out_earlier),
    and commit. Returns the new sha, or None if there was nothing to commit. Leaving out only ever
    unstages files HEAD does not hold: a tracked file is never untracked."""
    from gtd.workflow.unsafe import left_out_earlier

    _ask_identity(repo)
    names = [*(leave_out or []), *left_out_earlier(repo)]
    staged = set(_added(repo)) if names else set()  # new files the person staged: theirs to commit
    git(repo, "add", "-A")
    if names:
        _unstage_new(repo, names, keep=staged)
    return _commit(repo, message, allow_empty=allow_empty)


def _added(repo: Path) -> list[str]:
    """The files the index adds (HEAD does not hold them)."""
    return [p for p in git(repo, "diff", "--cached", "--no-renames", "--name-only", "--diff-filter=A", "-z").split("\0") if p]


def _unstage_new(repo: Path, names: list[str], keep: set[str] = frozenset()) -> None:
    """Take out of the index the files it adds (not in HEAD) that are among `names` or below one of them
    (a name ending in "/" is a directory), but those in `keep`. The names are the agent's: matched as
    strings, never as pathspecs (the files are handed to git with --literal-pathspecs)."""
    files = set(names)
    dirs = tuple(name for name in files if name.endswith("/"))
    out = [p for p in _added(repo) if (p in files or p.startswith(dirs)) and p not in keep]
    if out:
        _run(repo, ["--literal-pathspecs", "rm", "-q", "--cached", "--pathspec-from-file=-", "--pathspec-file-nul"],
             input="\0".join(out).encode("utf-8", "surrogateescape"), capture_output=True, check=True)


def tracked_dirs(repo: Path) -> set[str]:
    """Every directory HEAD holds files in (none on an unborn branch)."""
    if not has_commits(repo):
        return set()
    return {p for p in git(repo, "ls-tree", "-r", "-d", "-z", "--name-only", "HEAD").split("\0") if p}


def commit_paths(repo_root: Path, paths: list[str], message: str) -> str | None:
    """Commit only these paths (staging them first), leaving other changes alone."""
    git(repo_root, "--literal-pathspecs", "add", "--", *paths)
    if not git(repo_root, "--literal-pathspecs", "diff", "--cached", "--name-only", "--", *paths).strip():
        return None
    git(repo_root, "--literal-pathspecs", "commit", "-q", "-m", _message(message), "--", *paths, env=_identity_env(repo_root))
    return git(repo_root, "rev-parse", "HEAD").strip()


def _commit(repo: Path, message: str, *, allow_empty: bool = False) -> str | None:
    if not allow_empty and _nothing_staged(repo):
        return None
    git(repo, "commit", "-q", "--allow-empty", "-m", _message(message), env=_identity_env(repo))
    return _head_summary(repo)


def _nothing_staged(repo: Path) -> bool:
    """The index holds no change against HEAD (on an unborn branch: False, the first commit is made).
    One git run in the usual case, where something is staged."""
    staged = _run(repo, ["diff", "--cached", "--quiet"], capture_output=True)
    if staged.returncode == 1:
        return False
    return has_commits(repo) and not git(repo, "diff", "--cached", "--name-only").strip()


def stage_only(repo: Path, files: list[str], patches: dict[str, str]) -> None:
    """Make the index HEAD plus exactly these files and these partial patches (hunks of a file, as
    diffs_from_head reads them: bytes that are not UTF-8 held as lone surrogates)."""
    git(repo, "read-tree", "HEAD") if has_commits(repo) else git(repo, "read-tree", "--empty")
    if files:
        git(repo, "--literal-pathspecs", "add", "-A", "--", *files)
    for path, patch in patches.items():
        result = _run(repo, ["apply", "--cached", "--recount", "-"],
                      input=patch.encode("utf-8", "surrogateescape"), capture_output=True)
        if result.returncode != 0:
            why = result.stderr.decode("utf-8", "replace").strip()
            raise GtdError(f"could not separate your fix from your feedback in {path}: {why}")


def commit_staged(repo: Path, message: str) -> str | None:
    """Commit what is staged (nothing staged: no commit)."""
    return _commit(repo, message)


def subject(repo: Path, sha: str) -> str:
    summary = _commit_summary(repo, sha)
    return summary[0] if summary else git(repo, "log", "-1", "--format=%s", sha).strip()


def commit_files(repo: Path, sha: str) -> list[str]:
    """What a commit changed, as `status<TAB>path` lines (A added, M modified, D deleted...)."""
    summary = _commit_summary(repo, sha)
    if summary:
        return list(summary[1])
    out = git(repo, "show", "--no-renames", "--name-status", "--format=", sha, check=False)
    return [line for line in out.splitlines() if line.strip()]


_SUMMARIES: dict[tuple[Path, str], tuple[str, tuple[str, ...]]] = {}


def _commit_summary(repo: Path, sha: str) -> tuple[str, tuple[str, ...]] | None:
    """A commit's subject and changed files from one git run, remembered: a full object name never
    names anything else (None for a ref or an abbreviation, which can move; or when git fails)."""
    if not (len(sha) in (40, 64) and all(c in "0123456789abcdef" for c in sha)):
        return None
    key = (repo, sha)
    if key not in _SUMMARIES:
        out = git(repo, "show", "--no-renames", "--name-status", "--format=%s%x00", sha, check=False)
        if "\0" not in out:
            return None
        _SUMMARIES[key] = _subject_and_files(out)
    return _SUMMARIES[key]


def _subject_and_files(out: str) -> tuple[str, tuple[str, ...]]:
    """`git show --name-status --format=%s%x00` output: the subject, then one line per changed file."""
    subject, rest = out.split("\0", 1)
    return subject.strip(), tuple(line for line in rest.splitlines() if line.strip())


def _head_summary(repo: Path) -> str:
    """HEAD's full name, its subject and changed files remembered from the same git run: every commit gtd
    makes is shown with them right after (git.subject, git.commit_files), so this is one run, not two."""
    out = git(repo, "show", "--no-renames", "--name-status", "--format=%H%x00%s%x00", "HEAD")
    sha, rest = out.split("\0", 1)
    sha = sha.strip()
    _SUMMARIES[(repo, sha)] = _subject_and_files(rest)
    return sha


def _history(repo: Path, *args: str) -> str:
    """`git log ARGS` output; empty on an unborn branch (asked only when the log failed: one git run
    in the usual case, `gtd status` runs this on every call)."""
    result = _run(repo, ["log", *args], capture_output=True, **OUTPUT)
    if result.returncode == 0:
        return result.stdout
    if not has_commits(repo):
        return ""
    raise GtdError(f"git log {' '.join(args)} failed: {result.stderr.strip() or result.stdout.strip()}")


def log(repo: Path, limit: int = 200) -> list[tuple[str, str]]:
    """(sha, subject) of the newest commits, newest first."""
    return [tuple(line.split(" ", 1)) if " " in line else (line, "")  # type: ignore[misc]
            for line in _history(repo, f"-{limit}", "--format=%H %s").splitlines()]


def subjects(repo: Path, limit: int = 200) -> list[str]:
    """Commit subjects, newest first."""
    return _history(repo, f"-{limit}", "--format=%s").splitlines()


# A patch gtd reads and may apply: real content (no external diff tool, no textconv), a/ b/ prefixes
# whatever the person's diff config says, no colour, each file on its own (no rename pairing).
_PATCH = ("--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--src-prefix=a/", "--dst-prefix=b/")


def diffs_from_head(repo: Path, paths: list[str]) -> dict[str, str]:
    """The patch from HEAD to the work tree of each path (absent: no difference), from one git run.
    The output is cut at its `diff --git a/PATH b/PATH` lines, matched whole against the paths asked
    for, in bytes split at newlines only: content cannot fake a header (its lines start with ' ', '+',
    '-' or '\\'; a carriage return inside one is not a line end). A path git would quote in a header
    (non-ASCII, control characters, quotes, backslashes) gets a run of its own. Each patch is git's bytes
    exactly (CRLF kept, bytes that are not UTF-8 as lone surrogates), so its hunks apply back to the file."""
    def quoted(path: str) -> bool:
        return not path.isascii() or '"' in path or "\\" in path or any(ord(c) < 0x20 or ord(c) == 0x7f for c in path)

    def text(data: bytes) -> str:  # exact: a patch applied back (stage_only) must match the file byte for byte
        return data.decode("utf-8", errors="surrogateescape")

    def patch(*names: str) -> bytes:
        return _run(repo, ["--literal-pathspecs", "diff", *_PATCH, "HEAD", "--", *names], capture_output=True).stdout

    found: dict[str, str] = {}
    plain = [p for p in paths if not quoted(p)]
    if plain:
        headers = {f"diff --git a/{p} b/{p}".encode(): p for p in plain}
        parts: dict[str, list[bytes]] = {}
        current = None
        for line in patch(*plain).split(b"\n")[:-1]:
            if line.startswith(b"diff --git "):
                current = headers.get(line)
            if current is not None:
                parts.setdefault(current, []).append(line + b"\n")
        found.update((path, text(b"".join(lines))) for path, lines in parts.items())
    for path in paths:
        if quoted(path):
            found[path] = text(patch(path))
    return found


def diff_of_changes(repo: Path, max_chars: int = 20000) -> str:
    """The uncommitted diff (tracked files) plus the content of new files, for prompts."""
    git(repo, "add", "-A", "--intent-to-add")
    text = git(repo, "diff", "HEAD" if has_commits(repo) else "--cached")
    return text[:max_chars]


def diff_since(repo: Path, rev: str, paths: list[str] | None = None, max_chars: int = 20000) -> str:
    return git(repo, "diff", rev, "HEAD", "--", *(paths or []))[:max_chars]
