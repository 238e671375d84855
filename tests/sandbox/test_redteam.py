"""Red-team regressions: attacks from inside the sandbox (readonly/readwrite) that escaped once, or that
are refused and worth pinning. Each test runs real bwrap with a temporary HOME and repository."""

from __future__ import annotations

import socket

import pytest

from gtd.config.schema import Level

from sandbox_support import py, requires_bwrap, sh

pytestmark = [requires_bwrap, pytest.mark.bwrap]


# -- kernel surface ----------------------------------------------------------------------------

def test_host_sysctls_are_read_only_even_when_gtd_runs_as_root(sandbox, repo):
    # As root, uid 0 inside the user namespace *is* global root for sysctl permission checks, and bwrap
    # leaves /proc/sys writable: kernel.core_pattern = "|cmd" would run cmd as host root on any crash.
    # Writing back the current value proves the point without changing the host.
    s = sandbox(Level.READWRITE)
    r = sh(s, "v=$(cat /proc/sys/kernel/core_pattern); printf '%s\\n' \"$v\" > /proc/sys/kernel/core_pattern"
              " && echo WROTE; grep CapEff /proc/self/status", repo)
    assert "WROTE" not in r.out, r.out + r.err
    assert "CapEff:\t0000000000000000" in r.out  # no capabilities inside, whoever runs gtd


UNIX_VIA_HIGH_BITS = (
    "import ctypes, socket\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.syscall.restype = ctypes.c_long\n"
    # socket(int domain): the kernel drops the upper 32 bits, a filter comparing all 64 does not.
    "fd = libc.syscall(41, ctypes.c_long(0x100000000 | socket.AF_UNIX), socket.SOCK_STREAM, 0)\n"
    "if fd < 0: print('refused', ctypes.get_errno())\n"
    "else:\n"
    "    s = socket.socket(fileno=fd)\n"
    "    try: s.connect('host.sock'); print('CONNECTED')\n"
    "    except OSError as e: print('OPENED-BUT', e.errno)\n"
)


def test_unix_socket_filter_cannot_be_bypassed_with_upper_argument_bits(sandbox, repo):
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("syscall number 41 is x86_64's socket()")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(repo / "host.sock"))
    srv.listen(1)
    srv.settimeout(10)
    try:
        s = sandbox(Level.READWRITE)
        r = py(s, UNIX_VIA_HIGH_BITS, repo)
        assert r.out.strip() == "refused 1", r.out + r.err
    finally:
        srv.close()


@pytest.mark.parametrize("family,name", [
    (40, "AF_VSOCK"),  # not network-namespaced: reaches the hypervisor host and other VMs
    (17, "AF_PACKET"),
    (44, "AF_XDP"),
    (38, "AF_ALG"),
    (1, "AF_UNIX"),
    (0, "AF_UNSPEC"),
    (46, "AF_MAX"),
])
def test_only_inet_and_netlink_socket_families_can_be_created(sandbox, repo, family, name):
    code = (
        "import socket\n"
        "for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW):\n"
        "    try:\n"
        f"        socket.socket({family}, kind).close(); print('CREATED'); break\n"
        "    except OSError as e: print(e.errno)\n"
        "for fam in (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK):\n"
        "    socket.socket(fam, socket.SOCK_DGRAM).close()\n"
        "print('inet-ok')\n"
    )
    s = sandbox(Level.READWRITE)
    r = py(s, code, repo)
    assert "CREATED" not in r.out and "inet-ok" in r.out, (name, r.out, r.err)
    assert set(r.out.split()[:-1]) == {"1"}, r.out  # EPERM from the filter, not "not supported"
