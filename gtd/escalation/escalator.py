"""Deciding escalation requests: a saved rule, the reviewer model (escalationPolicy auto, bounded: it may
only allow once or deny), a person at a terminal, or the headless deny.

Saved approvals become concrete config rules (so the next run needs no question), written
atomically; project approvals are committed with the 🔐 prefix so the team shares them.
Every request and decision goes to the audit log with who decided.
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
from pathlib import Path

from gtd.audit import AuditLog
from gtd.commit_prefixes import COMMIT_PREFIXES
from gtd.config.levels import Level, Phase
from gtd.errors import GtdError
from gtd.escalation.decision import Decision
from gtd.escalation.pending import PendingStore
from gtd.paths import PROJECT_CONFIG_NAME, user_config_file
from gtd.record import record
from gtd.terminal_text import markup

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)

# What only an escalation needs (pydantic's request model, the config writer, filelock, rich's prompt) is
# imported when one happens: every phase would pay ~100 ms for them (issue 13).
if TYPE_CHECKING:
    from filelock import FileLock
    from rich.console import Console

    from gtd.escalation.prompt import PromptInput
    from gtd.escalation.request import EscalationRequest, Scope

__all__ = ["Decision", "Escalator", "SavedRule", "is_interactive", "network_error_domains", "save_rule",
           "saved_rule_scope"]

# Who decided, as written to the audit log.
BY_USER, BY_SAVED_RULE, BY_HEADLESS, BY_EARLIER = "user", "saved rule", "headless deny", "earlier answer this run"
BY_RAISED_LEVEL = "phase raised to network this run"
BY_PATH_CHECK = "path check"  # the path is not where it is spelled: nobody may grant it
BY_REVIEWER = "reviewer"  # the reviewer model (gtd/escalation/reviewer.py): allowed once, or denied headless


def unsafe_path_reason(request: EscalationRequest, repo_root: Path) -> str | None:
    """Why a path request must not be granted, re-checked when it is decided (the file system may have
    changed since it was raised, or it came from an older pending list): it leaves the workspace
    through `..`, goes through a symlink inside it, or no longer resolves to the place it names."""
    from gtd.workspace_files import UnsafeWorkspacePath, resolve_write_target

    if request.kind != "path":
        return None
    try:
        real = resolve_write_target(repo_root, request.target)
    except UnsafeWorkspacePath as exc:
        return str(exc)
    return None if str(real) == request.target else f"{request.target} really is {real}; ask for that path"


def is_interactive(non_interactive_flag: bool) -> bool:
    """Ask only when a person can answer: stdin is a terminal, the prompt's stream (stderr) is one,
    and --non-interactive is off. (stdout may be piped: prompts never go there.)"""
    return not non_interactive_flag and sys.stdin.isatty() and sys.stderr.isatty()


@record(frozen=True)
class SavedRule:
    path: Path  # the config file written
    rule: str  # the rule, as `key += value`
    commit: str | None = None  # the 🔐 commit for a project rule
    warning: str | None = None  # saved, but something around it did not work (e.g. the commit)


def save_rule(request: EscalationRequest, scope: Scope, repo_root: Path) -> SavedRule:
    """Write the request's concrete rule to the project or user config (atomic, rest of the file kept).

    A project rule is also committed, and recorded as approved by the user in the trust store (the
    loader honours it even if the rest of the file is not trusted); a project file the user trusted
    stays trusted. The whole sequence runs under one lock per file, so concurrent approvals from
    several processes neither lose a rule, nor leave a trusted file untrusted, nor collide in git."""
    rule = request.rule(scope, repo_root)
    from gtd.config.writer import append_unique, edit_config_file, set_key
    from gtd.escalation.trust import TrustStore, content_digest, entry

    path = repo_root / PROJECT_CONFIG_NAME if scope == "project" else user_config_file()

    def mutate(document):
        (append_unique if rule.append else set_key)(document, rule.key, rule.value)

    if scope == "user":
        edit_config_file(path, mutate)
        return SavedRule(path, rule.describe())

    trust = TrustStore()
    with _approval_lock(path):
        pinned = trust.pinned(path)
        edit = edit_config_file(path, mutate, workspace=repo_root)
        trust.approve_entry(path, entry(rule.key, rule.value))
        # Pinned only when what the edit started from was nothing or exactly the content the person trusted,
        # and then the pin is the digest of the bytes gtd wrote, never a re-read: the agent may have created
        # the file just before the edit read it, or swap it the moment the write is done.
        started_trusted = edit.before is None or (pinned is not None and content_digest(edit.before.encode()) == pinned)
        not_pinned = None
        if started_trusted:
            trust.trust(path, content_digest(edit.written))
        else:
            not_pinned = _not_pinned_warning(path, edit.written, trust.approved(path), changed=pinned is not None)
        commit, warning = _commit(repo_root, request, mutate)  # under the lock: two approvals never race for git's index
    warnings = [text for text in (not_pinned, warning) if text]
    return SavedRule(path, rule.describe(), commit, "; ".join(warnings) or None)


def _not_pinned_warning(path: Path, written: bytes, approved: set[str], *, changed: bool) -> str | None:
    """What the person must know when gtd saved a rule into a project file it did not pin: the file holds
    loosening entries nobody approved (someone else, maybe the agent, wrote them); only the rule counts."""
    from gtd.config.files import config_from_text
    from gtd.escalation.trust import loosening_entries

    try:
        unapproved = [item for item in loosening_entries(config_from_text(path, written.decode("utf-8")))
                      if item not in approved]
    except (GtdError, ValueError):
        unapproved = []
    if not (unapproved or changed):
        return None
    why = "it changed since you trusted it" if changed else "you never trusted its content"
    shown = "; ".join(unapproved[:5]) + (f" (+{len(unapproved) - 5} more)" if len(unapproved) > 5 else "")
    return (f"{path} is not trusted ({why}, maybe by the agent), so only the rule you approved counts"
            + (f"; ignored until you trust the file: {shown}" if shown else "")
            + ". Review the file, then run `gtd trust` to honour it")


def _approval_lock(path: Path) -> FileLock:
    """Held across a project approval's edit, trust update and commit (the write takes config_lock inside)."""
    from gtd.config.writer import config_lock

    return config_lock(path, purpose="approve-", timeout=60)


def _commit(repo_root: Path, request: EscalationRequest, mutate) -> tuple[str | None, str | None]:
    """The 🔐 commit holds the committed file plus only the rule gtd added: the person's other
    uncommitted edits to the same file stay uncommitted."""
    import subprocess

    from gtd.config.writer import edited_text
    from gtd.sandbox.host.host_git import commit_file_text, git

    path = repo_root / PROJECT_CONFIG_NAME
    try:
        committed = git(repo_root, "show", f"HEAD:{PROJECT_CONFIG_NAME}", check=False)
        text = edited_text(path, committed, mutate)
        sha = commit_file_text(repo_root, PROJECT_CONFIG_NAME, text,
                               f"{COMMIT_PREFIXES['config']} gtd: {request.short(repo_root)} (approved by user)")
        return sha, None
    except (GtdError, subprocess.CalledProcessError) as exc:
        return None, f"saved, but not committed: {exc}"


def saved_rule_scope(request: EscalationRequest, repo_root: Path) -> Scope | None:
    """Whether the config as it is now (trust filter applied) already allows the request, and
    from which file: a rule saved since the boundary was set (another process, an earlier answer)."""
    from gtd.config.loader import load_config
    from gtd.config.merge import merge
    from gtd.config.schema import GtdConfig
    from gtd.escalation.trust import filter_untrusted_project

    try:
        loaded = load_config(repo_root, project_filter=filter_untrusted_project)
        if not _covers(loaded.config, request, repo_root):
            return None
        defaults = GtdConfig().model_dump(by_alias=True, mode="json")
        for layer in reversed(loaded.layers):
            if layer.name in ("project", "user"):
                alone = GtdConfig.model_validate(merge(defaults, layer.values))
                if _covers(alone, request, repo_root):
                    return layer.name
        return "user"
    except Exception:  # noqa: BLE001 - an unreadable config allows nothing: ask (or deny) as usual
        return None


def _covers(config, request: EscalationRequest, repo_root: Path) -> bool:
    from gtd.sandbox.policy.domains import DomainRules, split_host_port
    from gtd.sandbox.policy.sandbox_policy import build_policy

    if request.kind == "level":
        return request.phase is not None and request.requested_level is not None and \
            config.sandbox.phases.for_phase(request.phase).rank >= request.requested_level.rank
    policy = build_policy(config, workspace=repo_root, phase=request.phase, level=request.level)
    if request.kind == "domain":
        host, port = split_host_port(request.target)
        rules = DomainRules.parse(policy.reachable, policy.deny_domains)
        return rules.decide(host, port or 443) == "allow"
    from gtd.workspace_files import UnsafeWorkspacePath, resolve_write_target

    try:  # resolve first, then match: the place the write would land now, not the request's spelling
        target = resolve_write_target(repo_root, request.target)
    except UnsafeWorkspacePath:
        return False  # goes through a symlink or leaves the workspace: no saved rule covers it
    if str(target) != request.target:
        return False  # it resolves elsewhere than it did when it was requested: ask again
    inside = lambda roots: any(target == root or root in target.parents for root in roots)  # noqa: E731
    return inside(policy.writable) and not inside(policy.protected)


class Escalator:
    """Decides requests for one gtd invocation. Thread-safe: the proxy asks from its own threads,
    and one question is on screen at a time. An answer holds for the rest of the invocation, so a
    denied host is not asked about again and an "allow once" is not asked twice."""

    def __init__(self, repo_root: Path, *, interactive: bool, audit: AuditLog, phase: Phase | None = None,
                 console: Console | None = None, prompt_input: PromptInput | None = None):
        self.repo_root = repo_root
        self.interactive = interactive
        self.audit = audit
        self.phase = phase
        if console is None:
            from gtd.terminal_text import SafeConsole

            console = SafeConsole(stderr=True, highlight=False)
        self.console = console
        self.prompt_input = prompt_input
        # What is running now ("test command `npm test`", "Bash call: npm install"), set by the phase so a
        # connection the proxy holds can say why it was opened. Plain attribute: one atomic assignment.
        self.activity: str | None = None
        # The running agent's inactivity clock (gtd.providers.runner.ActivityClock), held while a question
        # is on screen so the person's thinking time is never taken for a hung agent.
        self.clock = None
        self.screen = None  # the progress view (gtd.workflow.progress.Progress): paused while asking
        self.pending = PendingStore(repo_root)
        self.headless_denied: list[EscalationRequest] = []
        self._lock = threading.Lock()
        self._answers: dict[str, Decision] = {}  # request id -> decision, for this invocation
        # Phases the person chose to run at a higher level for the rest of this invocation (a registry
        # refused at readwrite: "run this phase at network"). RunContext.level_for reads it.
        self.raised_levels: dict[Phase, Level] = {}
        # The reviewer model (gtd.escalation.reviewer.Reviewer) under sandbox.escalationPolicy auto; None: prompt.
        self.reviewer = None

    def decide(self, request: EscalationRequest, *, created_by_gtd: str | None = None) -> Decision:
        """`created_by_gtd`: why the sandbox refused a write its policy allows (workflow/backend_created.py), said
        with the decision when the config indeed allows it (decided_by stays "saved rule": that holds too)."""
        with self._lock:
            if request.id in self._answers:
                decision = self._answers[request.id]
                self.audit.record("escalation_decision", id=request.id, target=request.target,
                                  decision=decision.value, decided_by=BY_EARLIER)
                return decision
            self.audit.record("escalation_request", **request.model_dump(mode="json"))
            decision = self._decide(request, created_by_gtd)
            self._answers[request.id] = decision
            return decision

    def _decide(self, request: EscalationRequest, created_by_gtd: str | None = None) -> Decision:
        unsafe = unsafe_path_reason(request, self.repo_root)
        if unsafe is not None:  # resolve first: a path that is not where it is spelled is never asked about
            self.console.print(f"[red]not grantable:[/red] {markup(unsafe, one_line=True)}")
            self.audit.record("escalation_decision", id=request.id, target=request.target,
                              decision=Decision.DENY.value, decided_by=BY_PATH_CHECK, reason=unsafe)
            return Decision.DENY
        scope = saved_rule_scope(request, self.repo_root)
        if scope is not None:
            self.audit.record("escalation_decision", id=request.id, target=request.target, decision=scope,
                              decided_by=BY_SAVED_RULE, **({"created_by_gtd": created_by_gtd} if created_by_gtd else {}))
            return Decision(scope)
        verdict = self._review(request) if self.reviewer is not None else None
        if verdict is not None and verdict.decision == "allow":  # once, this run only: a reviewer never saves
            self.audit.record("escalation_decision", id=request.id, target=request.target,
                              decision=Decision.ONCE.value, decided_by=BY_REVIEWER, model=verdict.model,
                              reason=verdict.reason)
            return Decision.ONCE
        if verdict is not None:  # denied: it travels with the request (pending list, headless JSON, the question)
            request = request.model_copy(update={"review": verdict.to_json()})
        if not self.interactive:
            self.pending.add(request)
            self.headless_denied.append(request)
            by = {"decided_by": BY_REVIEWER, "model": verdict.model, "reason": verdict.reason} if verdict else \
                {"decided_by": BY_HEADLESS}
            self.audit.record("escalation_decision", id=request.id, target=request.target,
                              decision=Decision.DENY.value, pending=True, **by)
            return Decision.DENY
        from gtd.escalation import prompt

        clock, screen = self.clock, self.screen
        with clock.person_waiting() if clock is not None else contextlib.nullcontext(), \
                screen.paused() if screen is not None else contextlib.nullcontext():
            decision = prompt.ask(self.console, request, self.repo_root, prompt_input=self.prompt_input,
                                  offer_network=self._network_allows(request),
                                  # no phase: a command the person runs with `gtd sandbox run`, not an agent
                                  title="The sandbox blocked " + ("the agent" if request.phase else "the command"))
        fields: dict = {"reviewer_decision": verdict.decision, "reviewer_reason": verdict.reason,
                        "model": verdict.model} if verdict is not None else {}
        if decision == Decision.NETWORK and request.phase is not None:
            self.raised_levels[request.phase] = Level.NETWORK
            fields["raised_level"] = Level.NETWORK.value
            self.console.print(f"{request.phase.value} runs at level network for the rest of this run")
        if decision in (Decision.PROJECT, Decision.USER):
            try:
                saved = save_rule(request, decision.value, self.repo_root)
            except GtdError as exc:  # e.g. the file is invalid: say so, allow for this run only
                self.console.print(f"[red]could not save the rule:[/red] {markup(str(exc), one_line=True)}; allowed once instead")
                fields["save_error"] = str(exc)
                decision = Decision.ONCE
            else:
                fields.update(rule=saved.rule, saved_to=str(saved.path), commit=saved.commit)
                self.console.print(f"saved {markup(saved.rule, one_line=True)} to {markup(str(saved.path), one_line=True)}"
                                   + (f" (commit {saved.commit[:10]})" if saved.commit else ""))
                if saved.warning:
                    self.console.print(f"[yellow]warning:[/yellow] {markup(saved.warning, one_line=True)}")
        self.audit.record("escalation_decision", id=request.id, target=request.target, decision=decision.value,
                          decided_by=BY_USER, **fields)
        return decision

    def _review(self, request: EscalationRequest):
        """The reviewer's verdict (gtd.escalation.reviewer.Verdict) with a decision, or None: the request is out
        of the reviewer's bounds, or it gave no verdict (both recorded), and the `prompt` way decides."""
        bound = self.reviewer.out_of_bounds(request)
        if bound is not None:
            self.audit.record("reviewer_skipped", id=request.id, target=request.target, reason=bound)
            return None
        clock = self.clock
        with clock.person_waiting() if clock is not None else contextlib.nullcontext():  # not the agent's silence
            verdict = self.reviewer.review(request)
        if verdict.decision is None:
            self.audit.record("reviewer_fallback", id=request.id, target=request.target, reason=verdict.reason,
                              model=verdict.model)
            return None
        return verdict

    def network_decider(self, connection) -> bool:
        """For the proxy: asked (on a proxy thread, the connection held) about a host no rule decides."""
        from gtd.escalation.request import EscalationRequest

        host = f"[{connection.host}]" if ":" in connection.host else connection.host
        request = EscalationRequest.create(kind="domain", target=f"{host}:{connection.port}", phase=self.phase,
                                           level=connection.level,
                                           reason=f"{self.activity or 'a process in the sandbox'} opened a connection to it")
        raised = self.raised_levels.get(self.phase) if self.phase is not None else None
        if raised is not None and raised.rank > connection.level.rank and self._network_allows(request):
            self.audit.record("escalation_decision", id=request.id, target=request.target, decision="allow",
                              decided_by=BY_RAISED_LEVEL)
            return True  # the person already chose to run this phase at network
        return self.decide(request) != Decision.DENY

    def _network_allows(self, request: EscalationRequest) -> bool:
        """Whether a connection refused below `network` is one that level allows (a package registry: the
        defaults, the network level's allowDomains, the person's own registry settings)."""
        if request.kind != "domain" or request.phase is None or request.level.rank >= Level.NETWORK.rank:
            return False
        from gtd.config.loader import load_config
        from gtd.escalation.trust import filter_untrusted_project
        from gtd.sandbox.policy.domains import DomainRules, split_host_port
        from gtd.sandbox.policy.sandbox_policy import build_policy

        try:
            config = load_config(self.repo_root, project_filter=filter_untrusted_project).config
            policy = build_policy(config, workspace=self.repo_root, phase=request.phase, level=Level.NETWORK)
            host, port = split_host_port(request.target)
            return DomainRules.parse(policy.reachable, policy.deny_domains).decide(host, port or 443) == "allow"
        except Exception:  # noqa: BLE001 - an unreadable config offers nothing extra
            return False


# What common tools print when the network is unavailable to them, and where the host name is.
_HOST = r"([A-Za-z0-9][A-Za-z0-9.\-]*)"
_NETWORK_ERRORS = [
    re.compile(r"gtd sandbox: " + _HOST + r":(\d+) refused"),  # gtd's proxy says it itself
    re.compile(r"Could not resolve host:? '?" + _HOST),  # curl, git
    re.compile(r"getaddrinfo (?:ENOTFOUND|EAI_AGAIN) " + _HOST),  # node / npm
    re.compile(r"request to https?://" + _HOST + r"(?::(\d+))?/\S* failed"),  # npm
    re.compile(r"HTTPS?ConnectionPool\(host='" + _HOST + r"', port=(\d+)\)"),  # pip / requests
    re.compile(r"Failed to establish a new connection.*?host='" + _HOST + "'"),
    re.compile(r"ProxyError.*?(?:host='|CONNECT )" + _HOST),
    re.compile(r"unable to access 'https?://" + _HOST + r"(?::(\d+))?/"),  # git
    re.compile(r"dial tcp: lookup " + _HOST),  # go
    re.compile(r"Temporary failure in name resolution.*?([A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+)"),
]


def network_error_domains(output: str) -> list[tuple[str, int]]:
    """Domains a failed command tried to reach, from the network errors it printed (port 443 unless shown)."""
    found: list[tuple[str, int]] = []
    for pattern in _NETWORK_ERRORS:
        for match in pattern.finditer(output):
            host = match.group(1).rstrip(".").lower()
            port_text = match.group(2) if pattern.groups >= 2 else None
            port = int(port_text) if port_text else 443
            if "." in host and not host.replace(".", "").isdigit() and (host, port) not in found:
                found.append((host, port))
    return found
