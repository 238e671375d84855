"""Deciding escalation requests: a person at a terminal, or the headless deny.

Saved approvals become concrete config rules (so the next run needs no question), written
atomically; project approvals are committed with the 🔐 prefix so the team shares them.
Every request and decision goes to the audit log with who decided.
"""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path

from rich.console import Console

from gtd.audit import AuditLog
from gtd.config.schema import Phase
from gtd.config.writer import append_unique, edit_config_file, set_key
from gtd.escalation import prompt
from gtd.escalation.pending import PendingStore
from gtd.escalation.prompt import Decision
from gtd.escalation.request import EscalationRequest, Scope
from gtd.escalation.trust import TrustStore, loosening_entries
from gtd.paths import PROJECT_CONFIG_NAME, user_config_file

__all__ = ["Decision", "Escalator", "is_interactive", "network_error_domains", "save_rule"]


def is_interactive(non_interactive_flag: bool) -> bool:
    """Ask only when a person can answer: stdin and stderr are terminals and --non-interactive is off."""
    return not non_interactive_flag and sys.stdin.isatty() and sys.stderr.isatty()


def save_rule(request: EscalationRequest, scope: Scope, repo_root: Path) -> Path:
    """Write the request's concrete rule to the project or user config (atomic, format kept).
    Project rules are committed; a project file the user already trusted stays trusted."""
    from gtd.workflow.git import commit_paths
    from gtd.workflow.steps import CONFIG_PREFIX

    rule = request.rule(scope, repo_root)
    path = repo_root / PROJECT_CONFIG_NAME if scope == "project" else user_config_file()
    trust = TrustStore()
    was_trusted = scope == "project" and (not path.exists() or trust.is_trusted(path) or not _loosens(path))

    def mutate(document):
        (append_unique if rule.append else set_key)(document, rule.key, rule.value)

    edit_config_file(path, mutate)
    if scope == "project":
        if was_trusted:
            trust.trust(path)  # the person just approved this content
        commit_paths(repo_root, [PROJECT_CONFIG_NAME],
                     f"{CONFIG_PREFIX} config: {rule.describe()} (approved: {request.summary()})")
    return path


def _loosens(path: Path) -> bool:
    from gtd.config.files import read_config_file

    return bool(loosening_entries(read_config_file(path)))


class Escalator:
    def __init__(self, repo_root: Path, *, interactive: bool, audit: AuditLog, phase: Phase | None = None,
                 console: Console | None = None):
        self.repo_root = repo_root
        self.interactive = interactive
        self.audit = audit
        self.phase = phase
        self.console = console or Console(stderr=True)
        self.pending = PendingStore(repo_root)
        self.headless_denied: list[EscalationRequest] = []
        self._lock = threading.Lock()  # one question at a time, whatever thread asks
        self._network_lock = threading.Lock()  # two connections to one host get one question
        self._network_answers: dict[tuple[str, int], bool] = {}

    def decide(self, request: EscalationRequest) -> Decision:
        with self._lock:
            self.audit.record("escalation_request", **request.model_dump(mode="json"))
            if not self.interactive:
                self.pending.add(request)
                self.headless_denied.append(request)
                self.audit.record("escalation_decision", id=request.id, decision=Decision.DENY.value,
                                  decided_by="headless", note="saved for `gtd approve`")
                return Decision.DENY
            decision = prompt.ask(self.console, request, self.repo_root)
            saved_to = None
            if decision in (Decision.PROJECT, Decision.USER):
                saved_to = str(save_rule(request, decision.value, self.repo_root))
            self.audit.record("escalation_decision", id=request.id, decision=decision.value, decided_by="user",
                              rule=request.rule("project" if decision == Decision.PROJECT else "user", self.repo_root).describe()
                              if saved_to else None, saved_to=saved_to)
            return decision

    def network_decider(self, connection) -> bool:
        """For the proxy: asked while it holds a connection to a host no rule allows or denies."""
        key = (connection.host, connection.port)
        with self._network_lock:
            if key not in self._network_answers:
                request = EscalationRequest.create(kind="domain", target=f"{connection.host}:{connection.port}",
                                                   phase=self.phase, level=connection.level,
                                                   reason="a process in the sandbox opened a connection to it")
                self._network_answers[key] = self.decide(request) != Decision.DENY
            return self._network_answers[key]


# What common tools print when the network is unavailable to them, and where the host name is.
_NETWORK_ERRORS = [
    re.compile(r"Could not resolve host:? '?([A-Za-z0-9.\-]+)"),  # curl, git
    re.compile(r"getaddrinfo (?:ENOTFOUND|EAI_AGAIN) ([A-Za-z0-9.\-]+)"),  # node / npm
    re.compile(r"Failed to establish a new connection.*?host='([A-Za-z0-9.\-]+)'"),
    re.compile(r"HTTPSConnectionPool\(host='([A-Za-z0-9.\-]+)', port=(\d+)\)"),  # pip / requests
    re.compile(r"ProxyError.*?(?:host='|CONNECT )([A-Za-z0-9.\-]+)"),
    re.compile(r"Temporary failure in name resolution.*?([A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+)"),
    re.compile(r"unable to access 'https?://([A-Za-z0-9.\-]+)"),  # git
    re.compile(r"Received HTTP code 403 from proxy after CONNECT.*?([A-Za-z0-9.\-]+):(\d+)"),
]


def network_error_domains(output: str) -> list[tuple[str, int]]:
    """Domains a failed command tried to reach, from the network errors it printed (https => 443)."""
    found: list[tuple[str, int]] = []
    for pattern in _NETWORK_ERRORS:
        for match in pattern.finditer(output):
            host = match.group(1).rstrip(".").lower()
            port = int(match.group(2)) if pattern.groups >= 2 and match.group(2) else 443
            if "." in host and (host, port) not in found:
                found.append((host, port))
    return found
