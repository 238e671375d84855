"""The `git` the sandboxed command finds first on PATH: one clear line instead of a confusing failure.

Below level `full` every git dir in the workspace is mounted read-only (history, refs, index and all
metadata host git reads). Reading commands (status, diff, log, show, blame, grep) work unchanged.
`git restore <file>` and `git checkout -- <file>` run against a throwaway copy of the index in the
sandbox's private /tmp, so an agent can still undo its own edits. Commands that would write history
(add, commit, stash, branch, checkout -b, switch, reset, ...) stop at once with one line saying what to
do instead: in a workflow step, that gtd commits the work tree after it; under `gtd sandbox run`, to run
git on the host once the command is done. Repositories with a writable git dir (a test suite's temporary
repos under /tmp) are passed straight through.

This is convenience, not the security boundary: the read-only mount is. Removing the wrapper from
PATH only brings back git's own read-only errors.
"""

from __future__ import annotations

from gtd.which import which

# Inside the sandbox's private /tmp, so nothing is ever created on the host for it.
SHIM_DIR = "/tmp/.gtd-bin"

SCRIPT = r"""#!/bin/sh
# gtd's git wrapper inside the sandbox (see gtd/sandbox/policy/gitshim.py).
real=${GTD_REAL_GIT:-/usr/bin/git}
find_gitdir() {
  while [ $# -gt 0 ]; do
    case $1 in
      -C) cd -- "$2" 2>/dev/null || return 1; shift 2 ;;
      -c|--namespace|--exec-path|--config-env|--super-prefix) shift 2 ;;
      --git-dir) GIT_DIR=$2; export GIT_DIR; shift 2 ;;
      --git-dir=*) GIT_DIR=${1#*=}; export GIT_DIR; shift ;;
      --work-tree) GIT_WORK_TREE=$2; export GIT_WORK_TREE; shift 2 ;;
      --work-tree=*) GIT_WORK_TREE=${1#*=}; export GIT_WORK_TREE; shift ;;
      -*) shift ;;
      *) break ;;
    esac
  done
  "$real" rev-parse --absolute-git-dir 2>/dev/null
}
gitdir=$(find_gitdir "$@") || exec "$real" "$@"
[ -n "$gitdir" ] && [ ! -w "$gitdir" ] || exec "$real" "$@"
sub="" ; skip=0 ; after=0 ; dashdash=0 ; words=0 ; paths_only=1 ; first=""
for a in "$@"; do
  if [ -z "$sub" ]; then
    if [ $skip = 1 ]; then skip=0; continue; fi
    case $a in
      -C|-c|--git-dir|--work-tree|--namespace|--exec-path|--config-env|--super-prefix) skip=1 ;;
      -*) ;;
      *) sub=$a ;;
    esac
    continue
  fi
  case $a in
    --) dashdash=1 ;;
    -b|-B|--orphan|-c|-C) [ "$sub" = checkout ] && after=1 ;;
    -d|-D|-m|-M|-f|--delete|--move|--copy|--force|-u|--set-upstream-to=*|--unset-upstream|--edit-description) [ "$sub" = branch ] && after=1 ;;
    --staged|-S) [ "$sub" = restore ] && after=1 ;;
    -l|--list|-a|--all|-r|--remotes|-v|-vv|--verbose|--show-current|--contains|--no-contains|--merged|--no-merged|--points-at|--sort=*|--format=*|--column*|--color*) ;;
    -*) ;;
    *) [ -z "$first" ] && first=$a; words=$((words + 1)); [ $dashdash = 1 ] || [ -e "$a" ] || paths_only=0 ;;
  esac
done
refuse() {
  echo "gtd: 'git $sub' is not available in gtd's sandbox (the repository is read-only here): ${GTD_GIT_INSTEAD:-gtd commits the work tree after this step.}" >&2
  exit 1
}
with_scratch_index() {
  idx=$(mktemp "${TMPDIR:-/tmp}/gtd-index.XXXXXX") || exit 1
  [ -f "$gitdir/index" ] && cp "$gitdir/index" "$idx"
  GIT_INDEX_FILE=$idx "$real" "$@"; rc=$?
  rm -f "$idx" "$idx.lock"
  exit $rc
}
case $sub in
  stash) case $first in list|show) ;; *) refuse ;; esac ;;
  add|commit|switch|tag|merge|rebase|cherry-pick|revert|reset|am|rm|mv|gc|prune|repack|pull|fetch|worktree|notes|replace|update-ref|update-index|symbolic-ref|filter-branch|maintenance) refuse ;;
  branch) { [ $after = 1 ] || [ $words -gt 0 ]; } && refuse ;;
  restore) [ $after = 1 ] && refuse; with_scratch_index "$@" ;;
  checkout)
    [ $after = 1 ] && refuse
    { [ $dashdash = 1 ] || { [ $words -gt 0 ] && [ $paths_only = 1 ]; }; } || refuse
    with_scratch_index "$@" ;;
esac
exec "$real" "$@"
"""

# What the refusal advises: a workflow step's changes are committed by gtd after it; a command under
# `gtd sandbox run` belongs to the person, who runs git on the host.
STEP_ADVICE = "gtd commits the work tree after this step, so just leave your changes in the files."
COMMAND_ADVICE = ("run it on the host once the command is done (or the command at --level full, where the "
                  "repository is writable).")


def real_git() -> str:
    """The host's git, found on the sandbox's PATH before the wrapper is put in front of it."""
    return which("git") or "/usr/bin/git"


def with_shim(env: dict[str, str], *, in_step: bool) -> dict[str, str]:
    """The sandbox environment with the wrapper first on PATH. `in_step`: the command runs for a workflow
    step (gtd commits after it), not as the person's own `gtd sandbox run`."""
    env = dict(env)
    env.setdefault("GTD_REAL_GIT", real_git())
    env["GTD_GIT_INSTEAD"] = STEP_ADVICE if in_step else COMMAND_ADVICE
    env["PATH"] = SHIM_DIR + (":" + env["PATH"] if env.get("PATH") else "")
    return env
