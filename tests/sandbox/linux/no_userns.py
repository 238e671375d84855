"""Run a command where namespaces cannot be created, as under Docker's default seccomp profile.

    python tests/sandbox/linux/no_userns.py -- CMD ARG...

Installs a seccomp filter (no_new_privs first, as any unprivileged filter needs) that refuses what
Docker's default profile refuses to a container without CAP_SYS_ADMIN: unshare() and clone() with
any CLONE_NEW* flag (EPERM), setns() (EPERM) and clone3() (ENOSYS, so libc falls back to clone(),
whose flags the filter can read). Then execs the command: it and everything it starts (gtd, bwrap)
inherit the filter, so bubblewrap fails to create its namespaces exactly as in such a container.
"""

from __future__ import annotations

import errno
import os
import sys

CLONE_NEW = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080)


def refuse_namespaces() -> None:
    import pyseccomp as sc

    f = sc.SyscallFilter(sc.ALLOW)
    eperm = sc.ERRNO(errno.EPERM)
    for flag in CLONE_NEW:
        f.add_rule(eperm, "unshare", sc.Arg(0, sc.MASKED_EQ, flag, flag))
        f.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    f.add_rule(eperm, "setns")
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    f.load()  # sets no_new_privs itself (SCMP_FLTATR_CTL_NNP defaults to on)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        sys.stderr.write("usage: no_userns.py -- CMD ARG...\n")
        return 2
    refuse_namespaces()
    os.execvp(argv[0], argv)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
