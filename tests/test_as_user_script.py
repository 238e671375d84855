"""scripts/as-user, through which root's scripts/test-as-user runs everything as the unprivileged user: that
user's processes, and any they leave running, never hold root's terminal (no TIOCSTI into root's shell,
no reading what root types next, nor its environment); and scripts/test-as-user, which uses it."""

from __future__ import annotations

import grp
import os
import pty
import pwd
import subprocess
from pathlib import Path

import pytest

AS_USER = Path(__file__).resolve().parents[1] / "scripts" / "as-user"
TEST_AS_USER = AS_USER.with_name("test-as-user")


def _unprivileged_user() -> str | None:
    """A user whose name is also a group (as_user passes --regid=USER): scripts/test-as-user's, or `dev`."""
    for name in ("gtd-test", "dev"):
        try:
            pwd.getpwnam(name), grp.getgrnam(name)
            return name
        except KeyError:
            continue
    return None


USER = _unprivileged_user()
as_root = pytest.mark.skipif(os.geteuid() != 0 or USER is None, reason="root dropping to an unprivileged user")

PROBE = """
import os
try:
    os.close(os.open("/dev/tty", os.O_RDWR))
    print("controlling terminal")
except OSError:
    print("no controlling terminal")
print("terminal fds", [fd for fd in range(3) if os.isatty(fd)])
print("uid", os.getuid())
"""


def _at_a_terminal(argv: list[str]) -> str:
    """What `argv`, run by root at a terminal (its controlling one, and stdin, stdout, stderr), writes there."""
    pid, terminal = pty.fork()
    if pid == 0:  # pragma: no cover - child
        os.execv(argv[0], argv)
    said = b""
    while True:
        try:
            chunk = os.read(terminal, 4096)
        except OSError:  # EIO: every holder of the terminal's other side closed it
            break
        if not chunk:
            break
        said += chunk
    os.close(terminal)
    _, status = os.waitpid(pid, 0)
    text = said.decode().replace("\r\n", "\n")
    assert os.waitstatus_to_exitcode(status) == 0, text
    return text


@as_root
def test_the_user_gets_no_descriptor_of_roots_terminal_nor_a_controlling_one():
    text = _at_a_terminal([str(AS_USER), USER, "/usr/bin/python3", "-c", PROBE])
    assert "no controlling terminal" in text and "terminal fds []" in text, text  # its output still reaches it
    assert f"uid {pwd.getpwnam(USER).pw_uid}" in text, text


@as_root
def test_a_pipe_is_passed_as_it_is_and_the_exit_status_comes_back():
    # scripts/test-as-user pipes the tree into `as_user tar -x` and reads `as_user cat .installed`.
    ran = subprocess.run([str(AS_USER), USER, "sh", "-c", "cat; exit 7"], input="the tree\n", capture_output=True, text=True, cwd="/")
    assert (ran.returncode, ran.stdout) == (7, "the tree\n"), ran


@as_root
def test_nothing_of_roots_environment_reaches_the_user():
    # A CI job's token in root's environment: any process of the user's could read the command's
    # /proc/PID/environ (a process left running from the last run, watching for the next one).
    env = {**os.environ, "GTD_ROOTS_TOKEN": "secret"}
    ran = subprocess.run([str(AS_USER), USER, "env"], env=env, capture_output=True, text=True, cwd="/")
    assert ran.returncode == 0 and "PATH=" in ran.stdout, ran
    assert "secret" not in ran.stdout, ran.stdout


@as_root
def test_a_run_waiting_for_the_lock_says_what_holds_it():
    # Every process of the user's inherits the lock: one left running from the last run held the next
    # run silently, for good.
    import fcntl
    import selectors
    import signal

    try:
        pwd.getpwnam("gtd-test")
    except KeyError:
        pytest.skip("no gtd-test user (test-as-user would create it)")
    with open("/var/lib/gtd-test.lock") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pytest.skip("a test-as-user run is under way")
        waiting = subprocess.Popen([str(TEST_AS_USER), "--co"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                   text=True, start_new_session=True)
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(waiting.stderr, selectors.EVENT_READ)
                said = waiting.stderr.readline() if sel.select(timeout=30) else ""
        finally:
            os.killpg(waiting.pid, signal.SIGKILL)
            waiting.wait()
    assert "waiting for another run as gtd-test" in said and "ps -u gtd-test" in said, said


def test_the_users_copy_gets_the_tree_but_not_git_nor_what_is_ignored(tmp_path):
    # A CI checkout's .git/config holds its token (actions/checkout's extraheader); a .env beside the code
    # is ignored by git. Neither is the unprivileged user's to read.
    tree = tmp_path / "tree"
    (tree / "scripts").mkdir(parents=True)
    (tree / "scripts" / "test-as-user").write_bytes(TEST_AS_USER.read_bytes())
    (tree / "scripts" / "test-as-user").chmod(0o755)
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    (tree / ".gitignore").write_text(".env\n")
    (tree / ".env").write_text("TOKEN=secret\n")
    (tree / "code.py").write_text("tracked\n")
    subprocess.run(["git", "-C", str(tree), "add", "code.py", ".gitignore"], check=True)
    (tree / "new.py").write_text("not yet added\n")
    subprocess.run(["git", "-C", str(tree), "config", "http.extraheader", "AUTHORIZATION: basic secret"], check=True)
    listed = subprocess.run([str(tree / "scripts" / "test-as-user"), "--files"], capture_output=True, text=True, check=True).stdout.split()
    assert {"code.py", "new.py", ".gitignore", "scripts/test-as-user"} <= set(listed), listed
    assert not [f for f in listed if f == ".env" or f.startswith(".git/")], listed


@as_root
def test_what_reaches_roots_terminal_is_text():
    # An escape sequence from the user's output (a window title here; OSC 52 sets the clipboard, and some
    # terminals answer a query by typing into root's shell) arrives without its control characters.
    said = _at_a_terminal([str(AS_USER), USER, "printf", r"\033]0;owned\007dots\tand\ttabs\n"])
    assert "\x1b" not in said and "\x07" not in said, repr(said)
    assert "]0;owneddots\tand\ttabs" in said, repr(said)
