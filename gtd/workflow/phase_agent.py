"""Run the agent (and the test command) for one phase inside the sandbox.

When the agent hits the boundary, the hit becomes a concrete escalation request; the
escalator (a person, a saved rule, or the headless policy) decides, and the phase goes
on at the approved boundary, resuming the agent's session where the provider can.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

from gtd.config.levels import Level, Phase
from gtd.errors import GtdError
from gtd.escalation.decision import Decision
from gtd.exitcodes import ExitCode
from gtd.prompts import render
from gtd.providers.base import AgentRequest
from gtd.providers.events import AgentEvent, EventKind, call_detail
from gtd.providers.guard import ForbiddenToolUsed
from gtd.providers.runner import TIMEOUT_SETTINGS, ActivityClock, AgentResult, run_agent
from gtd.record import record, replace
from gtd.sandbox.policy.sandbox_policy import SandboxPolicy, build_policy
from gtd.sandbox.session import SandboxSession, Violation, open_sandbox
from gtd.sandbox.diagnose.violations import mentions_refusal
from gtd.workflow import markdown
from gtd.workflow.context import RunContext
from gtd.terminal_text import visible
from gtd.workspace_files import UnsafeWorkspacePath, create_resolved, resolve_write_target

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)

if TYPE_CHECKING:  # a pydantic model, imported when the agent hits the boundary (issue 13: start-up)
    from gtd.escalation.request import EscalationRequest

MAX_ESCALATION_ROUNDS = 5


class EscalationPending(GtdError):
    """Headless run hit the boundary: requests were denied and saved for `gtd approve`."""

    exit_code = ExitCode.ESCALATION_PENDING


@record
class TestRun:
    passed: bool
    output: str
    exit_code: int | None


class PhaseAgent:
    def __init__(self, ctx: RunContext, phase: Phase):
        self.ctx = ctx
        self.phase = phase
        ctx.escalator.phase = phase  # network requests raised by the proxy belong to this phase
        self.session_id: str | None = None
        self.once_writable: list[Path] = []  # paths approved "once" for this phase
        self.once_domains: list[str] = []  # domains approved "once" for this phase
        self.new_files: set[Path] = set()  # refused writes that were creating a file (not a directory)
        self.backend_created: dict[str, str] = {}  # refused only by the backend's limits: path -> which (backend_created)
        self.fresh_prompt: str | None = None  # for a fresh session when the stopped one cannot be resumed
        self._resuming_stopped = False  # session_id is a stopped run's (gtd.workflow.leftovers), not this run's

    @property
    def level(self) -> Level:
        return self.ctx.level_for(self.phase)

    def policy(self) -> SandboxPolicy:
        # Paths approved "once" go in before the policy decides whether the work tree must be walked.
        policy = build_policy(self.ctx.config, workspace=self.ctx.repo, phase=self.phase, level=self.level,
                              needs=self.ctx.provider.sandbox_needs(self.ctx.repo), extra_writable=tuple(self.once_writable))
        if self.once_domains:
            policy = replace(policy, allow_domains=tuple(policy.allow_domains) + tuple(self.once_domains))
        return policy

    def _open(self, policy: SandboxPolicy) -> SandboxSession:
        session = open_sandbox(policy, network_decider=self.ctx.escalator.network_decider,
                               on_violation=self._record_violation)
        if getattr(session, "unsandboxed", False):
            self.ctx.progress.warn(f"{self.phase.value}: running WITHOUT the sandbox (level {policy.level.value}, by explicit config)")
            self.ctx.audit.record("unsandboxed_run", phase=self.phase.value, level=policy.level.value)
        return session

    def _record_violation(self, violation: Violation) -> None:
        self.ctx.audit.record("violation", phase=self.phase.value, kind=violation.kind, target=violation.target,
                              level=violation.level.value, detail=violation.detail)
        self.ctx.progress.refused(violation.kind, violation.target, phase=self.phase.value,
                                  level=violation.level.value, detail=violation.detail)

    # -- the agent ----------------------------------------------------------------------------

    def ask(self, prompt: str, *, system_prompt: str, editable_paths: list[str] | None) -> AgentResult:
        """One prompt, continued through any approved escalations until the agent finishes. The work
        tree is recorded as the agent changes it (gtd.workflow.leftovers): a stop, even `kill -9` of gtd,
        leaves its changes known as its unfinished work, and the next run resumes its session."""
        from gtd.workflow import leftovers

        carried = leftovers.begin(self.ctx.repo, self.phase.value, self.ctx.provider.name)
        if carried is not None and carried.session and self.session_id is None:
            self.session_id, self._resuming_stopped = carried.session, True
        for _ in range(MAX_ESCALATION_ROUNDS + 1):
            policy = self.policy()
            request = AgentRequest(phase=self.phase, prompt=prompt, cwd=self.ctx.repo, system_prompt=system_prompt,
                                   model=self.ctx.config.models.for_phase(self.phase), resume_session=self.session_id,
                                   editable_paths=editable_paths)
            self.ctx.audit.record("agent_run", phase=self.phase.value, level=policy.level.value,
                                  provider=self.ctx.provider.name, resume=self.session_id)
            denied: list[tuple[str, AgentEvent, str]] = []
            calls: dict[str, AgentEvent] = {}
            sessions: set[str] = set()  # session ids already recorded

            def on_event(event: AgentEvent) -> None:
                # The agent is up and running: gtd's own next step, formatting TODO.md for the commit,
                # gets its libraries loaded meanwhile (not earlier: the sandbox's set-up needs the CPU).
                markdown.prepare_in_background()
                if event.kind == EventKind.TOOL_RESULT or (event.session_id and event.session_id not in sessions):
                    sessions.add(event.session_id or "")
                    self.record_work(session=event.session_id)  # first: the window a crash can hit stays short
                self.ctx.progress.event(event)
                if event.kind == EventKind.TOOL_CALL:
                    # a connection the proxy holds for a decision says what opened it (the escalation box);
                    # cleared at the result: a later connection is never put down to a call that has ended
                    self.ctx.escalator.activity = _call_reason(event)
                elif event.kind == EventKind.TOOL_RESULT:
                    self.ctx.escalator.activity = None
                if event.kind == EventKind.TOOL_CALL and event.tool_id:
                    calls[event.tool_id] = event
                if event.kind == EventKind.TOOL_RESULT and event.is_error:
                    # Read out of failed tool calls only: their patterns cost ~15 ms to compile.
                    from gtd.sandbox.diagnose.hints import misleading_error_hints
                    from gtd.sandbox.diagnose.violations import denied_write_paths

                    for path in denied_write_paths(event.text or ""):
                        denied.append((path, calls.get(event.tool_id or "", event), event.text or ""))
                    for hint in misleading_error_hints(event.text or "", policy):
                        self.ctx.progress.warn(hint)
                elif event.kind == EventKind.TOOL_RESULT and mentions_refusal(event.text or ""):
                    # A command that went on after a refused write and exited 0 (`touch ~/.x; echo done`):
                    # the writes the policy indeed refuses are refusals all the same.
                    from gtd.sandbox.diagnose.violations import refused_writes

                    for raw, _, _ in refused_writes(event.text or "", policy, self.ctx.repo):
                        denied.append((raw, calls.get(event.tool_id or "", event), event.text or ""))

            clock = ActivityClock()
            self.ctx.escalator.clock = clock  # a question on screen holds the agent's inactivity clock
            try:
                with self._open(policy) as session:
                    result = run_agent(self.ctx.provider, request, session, timeouts=self.ctx.config.timeouts,
                                       on_event=on_event, clock=clock, on_unannounced=self.ctx.progress.unannounced_tool)
            finally:
                self.ctx.escalator.clock = None
                self.ctx.escalator.activity = None
            self.ctx.audit.record("agent_exit", phase=self.phase.value, exit_code=result.exit_code,
                                  seconds=round(result.seconds, 4))
            self.session_id = result.session_id or self.session_id
            self.record_work(session=result.session_id)
            self._check_stopped(result)
            if self._resuming_stopped and not result.ok and not denied:
                self.ctx.progress.warn(f"could not resume the stopped agent session ({result.error}): a fresh session "
                                       "carries on, told what is already in the work tree")
                self.session_id, self._resuming_stopped = None, False
                prompt = self.fresh_prompt or prompt
                continue
            self._resuming_stopped = False
            requests = self._write_requests(policy, denied, _watched(session), getattr(session.backend, "name", None))
            self._stop_if_headless_denied()
            if not requests:
                if not result.ok:
                    raise GtdError(f"the agent ({self.ctx.provider.name}) failed in {self.phase.value}: {result.error}")
                return result
            granted = self._decide(requests)
            self._stop_if_headless_denied()
            if not granted:
                return result
            prompt = render("resume_after_escalation", blocked=", ".join(r.target for r in requests),
                            decision="allowed " + ", ".join(granted))
        raise GtdError(f"{self.phase.value}: stopped after {MAX_ESCALATION_ROUNDS} escalation rounds")

    def record_work(self, session: str | None = None) -> None:
        """The work tree as the agent has it now, in gtd's state (gtd.workflow.leftovers). A failure to
        record is shown, never fatal: the agent's run goes on."""
        from gtd.workflow import leftovers

        try:
            leftovers.snapshot(self.ctx.repo, session=session)
        except Exception as exc:  # noqa: BLE001 - a git hiccup must not stop the agent; the person hears it
            self.ctx.progress.warn(f"could not record the agent's work tree: {exc}")

    def _record_refused_writes(self, output: str, policy: SandboxPolicy, watched: set[str] = frozenset()) -> None:
        """Writes the test command's output reports refused that the policy refuses: shown and audited,
        whatever its exit status (a test run that swallows an EROFS still passes). `watched`: the ones the
        sandbox's write watch already recorded (linux/write_watch.py)."""
        if not mentions_refusal(output):
            return
        from gtd.sandbox.diagnose.violations import refused_writes

        for _, target, reason in refused_writes(output, policy, self.ctx.repo):
            if target in watched:
                continue
            self._record_violation(Violation(kind="write", target=target, level=policy.level, time=_now(),
                                             detail=reason))

    def _check_stopped(self, result: AgentResult) -> None:
        if result.stopped == "forbidden_tool":
            self.ctx.audit.record("forbidden_tool", phase=self.phase.value, tool=result.forbidden_tool)
            raise ForbiddenToolUsed(
                f"the agent called the interactive tool '{result.forbidden_tool}', which can never run headless; "
                "gtd stopped it")
        if result.stopped in TIMEOUT_SETTINGS:
            from gtd.providers.guard import AgentTimeout

            setting = TIMEOUT_SETTINGS[result.stopped]
            self.ctx.audit.record("agent_timeout", phase=self.phase.value, stopped=result.stopped, setting=setting,
                                  running=result.running)
            raise AgentTimeout(f"{self.phase.value}: {result.error}. If it was still working, raise {setting} "
                               "in .gtdrc.json or your user config (or `gtd config show` to see it); this step was not "
                               "committed: the agent's changes are left in the work tree and the next run carries "
                               "them on")

    def _write_requests(self, policy: SandboxPolicy, denied: list[tuple[str, AgentEvent, str]],
                        watched: set[str] = frozenset(), backend: str | None = None) -> list[EscalationRequest]:
        """Denied writes: protected paths are only violations (never grantable); others become requests.
        Each path is resolved first (workspace_files.resolve_write_target): a path that leaves the
        workspace through `..` or goes through a symlink inside it is refused, never asked about.
        `watched`: writes the sandbox's write watch already recorded (not recorded twice). `backend`: the
        sandbox's, whose own limits are named (backend_created.py)."""
        from gtd.workflow.backend_created import backend_limit

        requests, seen = [], set()
        for raw_path, call, error in denied:
            try:
                path = resolve_write_target(self.ctx.repo, raw_path)
            except UnsafeWorkspacePath as exc:
                if raw_path not in seen:
                    seen.add(raw_path)
                    self._record_violation(Violation(kind="write", target=raw_path, level=policy.level, time=_now(),
                                                     detail=f"not grantable: {exc.reason}"))
                    self.ctx.progress.warn(f"not grantable: {visible(exc, one_line=True)}")
                continue
            if path in seen:
                continue
            seen.add(path)
            protected = any(path == p or p in path.parents for p in policy.protected)
            if str(path) not in watched:
                self._record_violation(Violation(kind="write", target=str(path), level=policy.level,
                                                 time=_now(), detail="protected path" if protected else ""))
            if protected:
                continue
            if not _creates_directory(path, raw_path, call, error, self.ctx.repo):
                self.new_files.add(path)
            if (limit := backend_limit(backend, policy, path, self.ctx.repo)) is not None:
                self.backend_created[str(path)] = limit
            from gtd.escalation.request import EscalationRequest

            requests.append(EscalationRequest.create(kind="path", target=str(path), phase=self.phase, level=policy.level,
                                                     reason=_call_reason(call)))
        return requests

    def _decide(self, requests: list[EscalationRequest]) -> list[str]:
        granted = []
        for request in requests:
            decision = self.ctx.escalator.decide(request, created_by_gtd=self.backend_created.get(request.target))
            if decision == Decision.DENY:
                continue
            granted.append(request.target)
            if request.kind == "path":
                self._create_approved_path(Path(request.target))
            if decision == Decision.ONCE:
                if request.kind == "path":
                    self.once_writable.append(Path(request.target))
                elif request.kind == "domain":
                    self.once_domains.append(request.target)
                elif request.kind == "level" and request.requested_level:
                    self.ctx.once_levels[self.phase] = request.requested_level
            else:
                self.ctx.refresh_config()
        return granted

    def _create_approved_path(self, path: Path) -> None:
        """An approved path must exist before the sandbox opens (a bind needs something to bind), as
        what the agent was making: an empty file it was writing, else the directory it was creating.
        Created from its nearest existing ancestor without following symlinks (workspace_files)."""
        if os.path.lexists(path):
            return
        try:
            if path in self.new_files:
                if path.parent.is_dir() and not path.parent.is_symlink():
                    create_resolved(path, directory=False)
            else:
                create_resolved(path, directory=True)
        except (OSError, UnsafeWorkspacePath) as exc:
            self.ctx.progress.warn(f"could not create the approved path {visible(path, one_line=True)}: "
                                   f"{visible(exc, one_line=True)}")

    def _stop_if_headless_denied(self) -> None:
        if self.ctx.escalator.headless_denied:
            raise EscalationPending(f"{self.phase.value} needs approval: run `gtd approve`")

    # -- the test command ---------------------------------------------------------------------

    def run_tests(self, command: str) -> TestRun:
        """Run the configured test command through a shell, sandboxed at this phase's level."""
        from gtd.escalation.escalator import network_error_domains

        asked: set[str] = set()  # what this test run already escalated: never asked twice
        for _ in range(MAX_ESCALATION_ROUNDS):
            policy = self.policy()
            self.ctx.progress.running_command(f"test command: {command}")
            clock = ActivityClock()
            self.ctx.escalator.clock = clock  # a question about a connection the tests opened stops their clock
            self.ctx.escalator.activity = f"test command `{command}`"
            try:
                with self._open(policy) as session:
                    started = time.monotonic()
                    done = run_streaming(session, ["/bin/sh", "-c", command], cwd=self.ctx.repo,
                                         timeout=self.ctx.config.test_timeout_seconds,
                                         on_line=self.ctx.progress.output, clock=clock)
                    seconds = time.monotonic() - started
            finally:
                self.ctx.escalator.clock = None
                self.ctx.escalator.activity = None
                self.ctx.progress.running_command(None)
                self.record_work()  # the agent's tests may write files too: they are part of its step
            output = _text(done.stdout)
            self._record_refused_writes(output, policy, _watched(session))
            if done.returncode is None:
                return TestRun(False, output + f"\n[gtd] test command timed out after "
                                               f"{self.ctx.config.test_timeout_seconds}s (raise testTimeoutSeconds if "
                                               "it needs longer)", None)
            self.ctx.audit.record("test_run", phase=self.phase.value, level=policy.level.value, exit_code=done.returncode,
                                  seconds=round(seconds, 4))
            if done.returncode != 0:
                self._stop_if_headless_denied()  # the proxy refused a connection nobody could approve
            told, person_only = [], []
            if done.returncode != 0:
                from gtd.sandbox.diagnose.hints import split_hints

                told, person_only = split_hints(output, policy)  # the second says which host ports serve
            hints = told + person_only
            if hints:  # a refused write dressed up as a network error, a server on the host: say so, ask for no host
                for hint in hints:
                    self.ctx.progress.warn(hint)
                if told:  # the audit log is readable inside: the person-only kind is on screen only
                    self.ctx.audit.record("hint", phase=self.phase.value, hints=told)
                return TestRun(False, "\n".join([output, *told]) if told else output, done.returncode)
            if done.returncode == 0 or not policy.level.at_most(Level.READWRITE):
                return TestRun(done.returncode == 0, output, done.returncode)
            reason = f"test command `{command}` failed with a network error"
            domains = [f"{host}:{port}" for host, port in network_error_domains(output)]
            fresh = [d for d in domains if d not in asked]
            if domains and not fresh:
                return TestRun(False, output, done.returncode)  # already allowed: the failure is not the sandbox
            from gtd.escalation.request import EscalationRequest

            if fresh:
                asked.update(fresh)
                requests = [EscalationRequest.create(kind="domain", target=d, phase=self.phase, level=policy.level,
                                                     reason=reason) for d in fresh]
            elif _NETWORK_DOWN.search(output) and policy.level.rank < Level.NETWORK.rank and not asked:
                # The network failed but no host name can be read from the output: ask for the level.
                asked.add("level")
                requests = [EscalationRequest.create(kind="level", target=Level.NETWORK.value, phase=self.phase,
                                                     level=policy.level, requested_level=Level.NETWORK, reason=reason)]
            else:
                return TestRun(False, output, done.returncode)
            granted = self._decide(requests)
            self._stop_if_headless_denied()
            if not granted:
                return TestRun(False, output, done.returncode)
        return TestRun(False, output, done.returncode)


# Network failures that name no host (so only a level can be asked for).
_NETWORK_DOWN = re.compile(r"Network is unreachable|ENETUNREACH|Temporary failure in name resolution|"
                           r"Name or service not known|getaddrinfo failed|No address associated with hostname")


# A test run's output is the agent's (it wrote the tests): gtd keeps only its tail, which is all any reader
# uses (the prompt, the error message, the network-error hints), and reads no line longer than this in one
# piece, so `cat /dev/zero` cannot take gtd's memory outside the sandbox's limits.
TEST_OUTPUT_KEPT = 1024 * 1024
TEST_LINE_LIMIT = 64 * 1024


def run_streaming(session: SandboxSession, argv: list[str], *, cwd: Path, timeout: float,
                  on_line, clock: ActivityClock | None = None) -> subprocess.CompletedProcess:
    """Run a command in the sandbox, its stdout and stderr merged in order and handed line by line to
    `on_line` (the live tail) as they come. returncode None means it ran past `timeout` (not counting
    time `clock` spent waiting for a person) and its process group was killed."""
    import threading

    from gtd.providers.runner import OutputTail, kill_process_group, process_group, wait_exit

    proc = session.popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    pgid = process_group(proc)
    kept = OutputTail(TEST_OUTPUT_KEPT)

    def read() -> None:
        for raw in iter(lambda: proc.stdout.readline(TEST_LINE_LIMIT), b""):
            kept.append(raw)
            try:
                on_line(raw.decode("utf-8", "replace").rstrip("\n"))
            except Exception:  # noqa: BLE001 - the display never breaks the test run
                pass

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    code: int | None = None
    started = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            left = timeout - (now - started - (clock.held(now) if clock is not None else 0.0))
            if left <= 0:
                break
            if wait_exit(proc, min(left, 0.5)):
                code = proc.returncode
                break
    except BaseException:
        kill_process_group(proc, pgid)
        proc.wait()
        raise
    finally:
        kill_process_group(proc, pgid)  # leftovers (a background server) do not outlive the run
    reader.join(timeout=5)
    if code is None:
        proc.wait()
    left_out = f"[gtd] {kept.dropped} bytes of earlier output left out\n".encode() if kept.dropped else b""
    return subprocess.CompletedProcess(argv, code, left_out + kept.bytes(), b"")


def _creates_directory(path: Path, raw_path: str, call: AgentEvent, error: str, repo: Path) -> bool:
    """Whether the refused write was creating a directory: the tool's own target lies inside the
    refused path (a parent it had to make), or the error says so (mkdir)."""
    inputs = call.tool_input.values() if isinstance(call.tool_input, dict) else [call.tool_input]
    for value in inputs:
        if isinstance(value, str) and value and "\n" not in value and len(value) < 4096:
            try:
                target = (repo / value).resolve()
            except OSError:  # a place gtd may not resolve (/proc/1/root/...): not evidence of a directory
                continue
            if path in target.parents:
                return True
    return re.search(r"(?:mkdir|create directory|make directory)\b[^\n]*" + re.escape(raw_path), error) is not None


def _now() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _watched(session) -> set[str]:
    """The writes a session's write watch recorded (gtd.sandbox.linux.write_watch)."""
    return {v.target for v in session.violations if v.kind == "write"}


def _call_reason(call: AgentEvent) -> str:
    """Why a write was asked for, as the escalation box shows it: `Bash call: echo x > /etc/x` (the
    command, the file or the pattern, never the input's Python repr)."""
    import json

    detail = call_detail(call.tool_input) or json.dumps(call.tool_input or {}, ensure_ascii=False)
    return f"{call.tool or 'tool'} call: {_short(detail)}"


def _short(value: object, limit: int = 200) -> str:
    text = " ".join(str(value or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data
