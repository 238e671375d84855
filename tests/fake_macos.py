"""Stand-ins for macOS's `security` and `sandbox-exec`, so the macOS code paths run on Linux.

FakeSecurity: an executable that behaves as `/usr/bin/security` does for Claude Code's login item (the
generic-password commands claude and gtd use): it keeps the item's password in a file, records every argv
and stdin it gets, and answers `find-generic-password` with exit status 44 when there is no item.

fake_sandbox_exec: an executable named `sandbox-exec` that records the profile it is given (`-p PROFILE`) and
runs the command WITHOUT any sandbox. Tests using it check gtd's wiring of the seatbelt backend (the profile
it renders, the listeners, the environment), never that seatbelt enforces the profile: that needs a Mac.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SECURITY_SCRIPT = r'''#!PYTHON
import json, os, shlex, sys
here = os.path.dirname(os.path.abspath(__file__))
item = os.path.join(here, "item")
args = sys.argv[1:]
stdin = sys.stdin.read() if args[:1] == ["-i"] else None
with open(os.path.join(here, "calls.jsonl"), "a") as log:
    log.write(json.dumps({"argv": args, "stdin": stdin, "env_user": os.environ.get("USER")}) + "\n")
if os.path.exists(os.path.join(here, "fail-writes")) and (args[:1] == ["-i"] or args[:1] == ["add-generic-password"]):
    sys.stderr.write("security: SecKeychainItemModifyContent: User interaction is not allowed.\n")
    sys.exit(36)

def opt(words, flag):
    return words[words.index(flag) + 1] if flag in words else None

def add(words):
    with open(item + ".who", "w") as f:
        json.dump({"account": opt(words, "-a"), "service": opt(words, "-s")}, f)
    with open(item, "wb") as f:
        f.write(bytes.fromhex(opt(words, "-X")))

if args[:1] == ["-i"] and os.path.exists(os.path.join(here, "ignore-writes")):
    sys.exit(0)  # as a `security -i` whose command failed may end
if args[:1] == ["-i"]:
    for line in stdin.splitlines():
        words = shlex.split(line)
        if words[:1] == ["add-generic-password"]:
            add(words)
    sys.exit(0)
if args[:1] == ["add-generic-password"]:
    add(args)
    sys.exit(0)
if args[:1] == ["find-generic-password"]:
    who = json.load(open(item + ".who")) if os.path.exists(item + ".who") else {}
    if not os.path.exists(item) or who != {"account": opt(args, "-a"), "service": opt(args, "-s")}:
        sys.stderr.write("security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.\n")
        sys.exit(44)
    if "-w" in args:
        data = open(item, "rb").read()
        if os.path.exists(os.path.join(here, "print-hex")):
            print(data.hex())
        else:
            print(data.decode())
    else:
        print('keychain: "/Users/dev/Library/Keychains/login.keychain-db"\nclass: "genp"')
    sys.exit(0)
sys.stderr.write("fake security: unexpected arguments %r\n" % (args,))
sys.exit(2)
'''

SANDBOX_EXEC_SCRIPT = r'''#!/bin/sh
# fake sandbox-exec: records the profile, then runs the command with NO sandbox at all
[ "$1" = "-p" ] || { echo "fake sandbox-exec: expected -p PROFILE" >&2; exit 64; }
printf '%s' "$2" > "$(dirname "$0")/profile.sb"
shift 2
exec "$@"
'''


class FakeSecurity:
    """A fake `security` in `directory`; `login`: the item's password (a dict, stored as JSON), or none."""

    def __init__(self, directory: Path, login: dict | None = None, *, account: str = "dev",
                 service: str = "Claude Code-credentials"):
        directory.mkdir(parents=True, exist_ok=True)
        self.dir = directory
        self.path = directory / "security"
        self.path.write_text(SECURITY_SCRIPT.replace("PYTHON", sys.executable, 1))
        self.path.chmod(0o755)
        if login is not None:
            self.store(login, account=account, service=service)

    def store(self, login: dict | str, *, account: str = "dev", service: str = "Claude Code-credentials") -> None:
        (self.dir / "item").write_bytes((login if isinstance(login, str) else json.dumps(login)).encode())
        (self.dir / "item.who").write_text(json.dumps({"account": account, "service": service}))

    def item(self) -> dict:
        return json.loads((self.dir / "item").read_bytes())

    def calls(self) -> list[dict]:
        log = self.dir / "calls.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def fail_writes(self) -> None:
        (self.dir / "fail-writes").write_text("")

    def ignore_writes(self) -> None:
        """`security -i` ends with status 0 without saving anything."""
        (self.dir / "ignore-writes").write_text("")

    def print_hex(self) -> None:
        (self.dir / "print-hex").write_text("")


def fake_sandbox_exec(directory: Path) -> Path:
    """A fake `sandbox-exec` in `directory` (put it first on PATH); its last profile lands in profile.sb."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "sandbox-exec"
    path.write_text(SANDBOX_EXEC_SCRIPT)
    path.chmod(0o755)
    return path
