"""Sandbox checks for `gtd doctor`: each says what is wrong and how to fix it."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path


def _check(name: str, ok: bool, detail: str, fix: str = "") -> dict:
    return {"name": name, "ok": ok, "detail": detail, "fix": "" if ok else fix}


def sandbox_checks(cli_needs=None, *, cli: str | None = None, config=None, workspace: Path | None = None) -> list[dict]:
    """`cli_needs(scratch_dir)`: what the agent CLI gtd would run (`cli`) needs from the sandbox, after it
    prepared as for a real phase (None: no CLI to run); the start is probed with those real mounts (its config
    dir, its protected files, its login), under `config`, in `workspace`."""
    if sys.platform == "darwin":
        found = shutil.which("sandbox-exec")
        return [_check("sandbox-exec", bool(found), found or "not found", "sandbox-exec ships with macOS; check PATH (/usr/bin)")]
    if not sys.platform.startswith("linux"):
        return [_check("sandbox backend", False, f"no sandbox backend for {sys.platform}", "run gtd on Linux or macOS, or set sandbox.enabled=false")]

    checks = [_backend_check(config)]
    from gtd.host_programs import host_program

    bwrap = host_program("bwrap")
    if not bwrap:
        checks.append(_check("bubblewrap", False, "bwrap not found on PATH", "install bubblewrap: `apt-get install bubblewrap` / `dnf install bubblewrap`"))
    else:
        from gtd.sandbox.linux.bwrap import too_old, version_said

        version = version_said(bwrap)  # asked once: for the row and for the age check
        old = too_old(bwrap, version)
        checks.append(_check("bubblewrap", old is None, old or f"{bwrap} ({version})", "install a newer bubblewrap (see the detail above)"))

    from gtd.sandbox.linux import userns

    for name, ok, detail, fix in userns.checks():
        checks.append(_check(name, ok, detail, fix))
        if name.startswith("AppArmor"):
            checks[-1]["required"] = False  # a profile for bwrap lifts it: "sandbox start" below decides

    try:
        from gtd.sandbox.linux.seccomp import compile_filter

        size = len(compile_filter())
        checks.append(_check("seccomp (libseccomp)", True, f"filter compiled ({size // 8} BPF instructions)"))
    except Exception as exc:  # noqa: BLE001 - any failure here is the finding
        checks.append(_check("seccomp (libseccomp)", False, str(exc), "install libseccomp (`apt-get install libseccomp2`) and the pyseccomp package"))

    checks += _kernel_layer_checks()
    if bwrap:
        checks.append(_smoke_test(cli_needs, cli, config, workspace))
        checks.append(_caches_check())
    return checks


def _backend_check(config=None) -> dict:
    """Which Linux backend a sandbox starts with, and why bwrap is not used when it is not (backend_choice)."""
    from gtd.sandbox.linux.backend_choice import status

    found = status(getattr(getattr(config, "sandbox", None), "backend", "auto"))
    if found["backend"] == "bwrap":
        return _check("sandbox backend", True, f"bubblewrap ({found['reason']})")
    check = _check("sandbox backend", True, f"Landlock + seccomp, no namespaces: {found['reason']}. Weaker than "
                   "bubblewrap: " + "; ".join(found["weaker"]))
    check["required"] = False
    return check


def _caches_check() -> dict:
    """Package caches at readwrite: a copy-on-write overlay per project, or the per-project fallback."""
    from gtd.sandbox.linux.cache_layer import overlay_check

    ok, detail = overlay_check()
    if ok:
        return _check("package caches", True, detail)
    return _check("package caches", True,
                  f"overlays unavailable ({detail}): each project gets its own pip/npm/uv/go/... cache instead of "
                  "reading yours; cargo, gradle and maven caches stay read-only inside the sandbox")


def _kernel_layer_checks() -> list[dict]:
    """Landlock and resource limits: gtd runs without them (they are a second layer), so never required."""
    from gtd.sandbox.linux.kernel import status

    found = status()
    landlock = _check("Landlock", bool(found["landlockAbi"]), found["landlock"],
                      "Linux 5.13+ with Landlock enabled (CONFIG_SECURITY_LANDLOCK, `lsm=...,landlock` on the kernel command line)")
    cgroups = found["cgroups"]
    detail = "; ".join(f"{c}: {where}" for c, where in cgroups.items()) or "no writable cgroup"
    missing = [c for c in ("pids", "memory") if c not in cgroups]
    if missing:
        detail += f" ({', '.join(missing)} limited by rlimits inside the sandbox: per process for memory)"
    if "pids" in missing and os.geteuid() == 0:
        detail += "; processes are NOT limited: gtd runs as root, which RLIMIT_NPROC does not bind"
    limits = _check("resource limits", True, detail)
    launcher = _launcher_check()
    relay = _relay_check()
    for check in (landlock, limits, launcher, relay):
        check["required"] = False
    return [landlock, limits, launcher, relay]


def _launcher_check() -> dict:
    """Which launcher applies Landlock and the rlimits: the native one, or launch.py (a Python start per command)."""
    from gtd.sandbox.linux.nativelaunch import launcher_bytes

    if launcher_bytes() is not None:
        return _check("sandbox launcher", True, "native (gtd/sandbox/linux/launch.c, built with this machine's C compiler)")
    return _check("sandbox launcher", False, "launch.py: a Python start in front of every sandboxed command",
                  "install a C compiler (e.g. `apt-get install gcc`); gtd builds the native launcher on its next start")


def _relay_check() -> dict:
    """Which loop the proxy relays connections with: relay.c (no GIL per chunk), or Python's."""
    from gtd.sandbox.network.relay import use_native

    if use_native():
        return _check("proxy relay", True, "native (gtd/sandbox/network/relay.c, loaded from gtd's state dir)")
    return _check("proxy relay", False,
                  "Python loop: relayed bytes wait for the interpreter while gtd is busy (slower network in a session)",
                  "install a C compiler (e.g. `apt-get install gcc`), or remove a library in gtd's state dir "
                  "(`native/relay-*.so`) that is a symlink, not yours, or writable by others")


def _smoke_test(cli_needs=None, cli: str | None = None, config=None, workspace: Path | None = None) -> dict:
    """Start a real readwrite sandbox and run `true` in it: readwrite is the lowest level with a network layer
    (the proxy port, DNS and interception created inside the sandbox's network namespace), which a
    readonly sandbox has none of, so a readonly probe passed where no build phase could start. The mounts are
    the chosen agent CLI's (a login file, its protected config files): a plan only that CLI's runs have
    failed there while this probe passed."""
    from gtd.config.schema import GtdConfig, Level
    from gtd.errors import GtdError, SandboxUnavailable
    from gtd.sandbox.policy.sandbox_policy import build_policy
    from gtd.sandbox.session import open_sandbox

    with_cli = f" with {cli}'s mounts" if cli_needs is not None else ""
    with tempfile.TemporaryDirectory(prefix="gtd-doctor-") as tmp:
        try:
            needs = cli_needs(Path(tmp)) if cli_needs is not None else None
            policy = build_policy(config or GtdConfig(), workspace=workspace or Path(tmp), level=Level.READWRITE,
                                  needs=needs)
            with open_sandbox(policy) as session:
                result = session.run(["true"], cwd=policy.workspace, timeout=30)
            ok = result.returncode == 0
            layers = "Landlock, seccomp, proxy" if session.backend.name == "landlock" else "namespaces, seccomp, proxy, DNS"
            detail = (f"sandboxed `true` ran at readwrite{with_cli} ({layers})" if ok
                      else f"sandboxed `true` exited {result.returncode}: {result.stderr.decode(errors='replace').strip()}")
            return _check("sandbox start", ok, detail, "see the detail above; bwrap needs user and network namespaces")
        except SandboxUnavailable as exc:
            return _check("sandbox start", False, str(exc), "fix the cause above, or set sandbox.enabled=false to run unsandboxed (not recommended)")
        except GtdError as exc:
            return _check("sandbox start", False, f"{cli or 'the agent'} cannot start: {exc}",
                          "see the detail above")
        except Exception as exc:  # noqa: BLE001
            return _check("sandbox start", False, repr(exc), "report this as a gtd bug")
