"""The rule that keeps issue 9 class 1 closed: host-side code in workflow/, escalation/, config/ and
cli/ touches workspace files only through gtd.workspace_files. This scans their source for every
file-system call and fails on one that is not in the small allow-list of non-workspace uses below.
A new call that reads, writes or checks a file must go through gtd.workspace_files, or, if it
really touches gtd's own state (never the workspace), be added here with the reason."""

from __future__ import annotations

import ast
from pathlib import Path

import gtd

PACKAGES = ("workflow", "escalation", "config", "cli")
# Method names that read, write, create, remove or check a file, whatever object they are called on.
FILE_METHODS = {"read_text", "write_text", "read_bytes", "write_bytes", "open", "touch", "mkdir", "unlink",
                "rename", "rmdir", "exists", "is_file", "is_dir", "is_symlink", "lexists", "symlink_to",
                "iterdir", "glob", "rglob", "stat", "lstat", "chmod", "fdopen", "mkstemp", "mkdtemp", "makedirs",
                "scandir", "listdir", "walk", "readlink", "realpath", "samefile", "isfile", "isdir", "islink",
                "getsize"}
# Module functions that touch files (str.replace and list.remove are not file calls; shutil.which is not either).
MODULE_FUNCTIONS = {"os": {"remove", "replace", "rename", "open", "unlink", "mkdir", "makedirs", "chmod", "stat",
                           "lstat", "symlink", "link", "listdir", "scandir", "walk"},
                    "shutil": {"copy", "copy2", "copyfile", "copytree", "copymode", "copystat", "move", "rmtree", "chown"}}

# (file below gtd/, function) -> why it is not a workspace access.
ALLOWED = {
    ("workflow/leftovers.py", "_read"): "the agent's work record lives in gtd's per-project state dir",
    ("workflow/leftovers.py", "write_state"): "replaces a record in gtd's per-project state dir",
    ("workflow/green.py", "last_green"): "the last green test run's record lives in gtd's per-project state dir",
    ("workflow/leftovers.py", "worktree_tree"): "copies the repository's git index (git metadata, not the work tree) "
                                                "to a throw-away index in the system temp dir",
    ("workflow/leftovers.py", "forget"): "the leftovers marker lives in gtd's per-project state dir",
    ("workflow/unsafe.py", "left_out_earlier"): "the left-out list lives in gtd's per-project state dir",
    ("workflow/format_helper.py", "_detach"): "the forked formatter's stdio becomes /dev/null",
    ("workflow/format_helper.py", "_only_thread"): "the kernel's list of gtd's own threads (/proc/self/task)",
    ("workflow/phase_agent.py", "_create_approved_path"):
        "checks a path resolve_write_target already resolved; creation is workspace_files.create_resolved",
    ("escalation/pending.py", "_lock"): "lock file in gtd's per-project state dir",
    ("escalation/pending.py", "_read"): "the pending list in gtd's per-project state dir",
    ("escalation/trust.py", "_lock"): "lock file in gtd's state dir",
    ("escalation/trust.py", "_read"): "the trust pins in gtd's state dir",
    ("config/files.py", "read_config_text"): "the user's own config file (workspace files take the other branch)",
    ("config/loader.py", "_original_layer"): "the original gtd's user files in HOME (project ones: workspace_files)",
    ("config/loader.py", "_load"): "whether the user config file exists",
    ("config/cache.py", "read"): "validated-config cache entries in gtd's state dir",
    ("config/cache.py", "write"): "validated-config cache entries in gtd's state dir",
    ("config/cache.py", "_prune"): "validated-config cache entries in gtd's state dir",
    ("config/cache.py", "_code_fingerprint"): "gtd's own installed source files, part of the cache key",
    ("config/cache.py", "files_identity"): "stat of gtd's own installed source files, part of the cache key",
    ("cli/sandbox_cmd.py", "explain"):
        "lexists (follows no symlink, reads nothing): a protected or hidden path absent now is counted, not listed",
    ("config/cache.py", "_add_file"): "gtd's own code and the user config (the project config: workspace_files)",
    ("config/writer.py", "config_lock"): "lock files in gtd's state dir",
    ("config/writer.py", "atomic_write"): "user config and gtd's state files (workspace files: write_config_text)",
    ("cli/config_cmds.py", "init"): "whether the user config file exists (`gtd init --user`)",
    ("cli/workflow_cmds.py", "demo"): "creates the demo repository's own (fresh or --keep) directory",
    ("cli/sandbox_run.py", "shared_directories"): "resolves /, HOME and the temp dirs (reads no file)",
    ("cli/sandbox_run.py", "_refuse_shared_workspace"): "resolves the workspace to compare it with the shared "
                                                        "directories (reads no file)",
}


def _file_calls(path: Path) -> list[tuple[str, int, str]]:
    """(enclosing function, line, call) for every file-system call in the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    owner: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                owner.setdefault(id(inner), node.name)  # ast.walk is breadth-first: the outermost function wins
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            found.append((owner.get(id(node), "<module>"), node.lineno, "open"))
        elif isinstance(func, ast.Attribute):
            base = ast.unparse(func.value)
            if base == "workspace_files" or base.startswith("workspace_files."):
                continue
            if base in MODULE_FUNCTIONS:
                names = MODULE_FUNCTIONS[base]
                if func.attr in names:
                    found.append((owner.get(id(node), "<module>"), node.lineno, f"{base}.{func.attr}"))
                continue
            if func.attr in FILE_METHODS:
                found.append((owner.get(id(node), "<module>"), node.lineno, f"{base}.{func.attr}"))
    return found


def _scan() -> dict[tuple[str, str], list[str]]:
    root = Path(gtd.__file__).parent
    calls: dict[tuple[str, str], list[str]] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for function, line, call in _file_calls(path):
                calls.setdefault((rel, function), []).append(f"{rel}:{line} {call}()")
    return calls


def test_workspace_files_are_only_touched_through_gtd_workspace_files():
    offending = [where for key, wheres in _scan().items() if key not in ALLOWED for where in wheres]
    assert not offending, (
        "host-side code must read, write and check workspace files through gtd.workspace_files "
        "(no symlinks, regular files only, capped reads); found:\n" + "\n".join(offending))


def test_the_allow_list_has_no_stale_entries():
    calls = _scan()
    assert [key for key in ALLOWED if key not in calls] == []


def test_the_scan_sees_the_calls_it_forbids(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import os, shutil\nfrom pathlib import Path\n"
                      "def f(repo):\n"
                      "    (repo / 'TODO.md').read_text()\n    open(repo / 'AGENTS.md')\n"
                      "    os.replace('a', 'b')\n    shutil.copy('a', 'b')\n    Path('x').exists()\n"
                      "    os.path.isfile('x')\n    'a'.replace('a', 'b')\n    [1].remove(1)\n"
                      "    workspace_files.read_text(repo, 'TODO.md')\n")
    calls = [call for _, _, call in _file_calls(sample)]
    assert sorted(calls) == sorted(["repo / 'TODO.md'.read_text", "open", "os.replace", "shutil.copy",
                                    "Path('x').exists", "os.path.isfile"])
