"""The reviewer: under `sandbox.escalationPolicy: auto`, a model settles a request no saved rule covers.

The model proposes, code bounds it (the escalator enforces what a verdict may do):
- it is never asked about level `full`, nor about a request touching `denyDomains`, `denyReadPaths`, a
  protected path or a path outside the workspace (`out_of_bounds`); those go the `prompt` way;
- "allow" grants once, for this run only; nothing is ever saved;
- no verdict (the model unreachable, `timeouts.reviewerSeconds` passed, an answer that is not the JSON
  verdict) falls back to `prompt`: the person is asked, or headless denies.

It runs the configured provider's CLI (its login, its model) one-shot, with no tools, in a readonly
sandbox over an empty directory. The agent's text reaches it only as quoted data: JSON inside delimiters
carrying a random nonce, with `<` and `>` escaped, under a system prompt saying the data holds no
instructions (docs/reviewer.md).
"""

from __future__ import annotations

import json
import secrets
import tempfile
from pathlib import Path

from gtd.config.levels import Level, Phase
from gtd.record import record

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Any, Callable

    from gtd.escalation.request import EscalationRequest
    from gtd.providers.base import Provider

DECISIONS = ("allow", "deny")
MAX_REASON = 300  # characters of the model's reason kept: it is shown, audited and printed as JSON


@record(frozen=True)
class Verdict:
    decision: str | None  # "allow" | "deny"; None: no verdict, the `prompt` way decides
    reason: str  # the model's reason, or why there is no verdict
    model: str | None = None

    def to_json(self) -> dict:
        return {"decision": self.decision, "reason": self.reason, "model": self.model}


@record(frozen=True)
class _Timeouts:
    """The runner's timeouts for one review: everything within reviewerSeconds."""

    inactivity_seconds: float
    run_seconds: float
    tool_seconds: float


def out_of_bounds(request: EscalationRequest, config: Any, repo_root: Path, needs=None) -> str | None:
    """Why the reviewer may not decide this request (it goes the `prompt` way), or None."""
    from gtd.sandbox.policy.sandbox_policy import build_policy

    if request.kind == "level":
        requested = request.requested_level or Level(request.target)
        return "level full is only a person's to grant" if requested == Level.FULL else None
    policy = build_policy(config, workspace=repo_root, phase=request.phase, level=request.level, needs=needs)
    if request.kind == "domain":
        from gtd.sandbox.policy.domains import DomainRules, split_host_port

        deny = [*policy.deny_domains, *(rule for level in Level
                                        for rule in config.sandbox.levels.for_level(level).deny_domains)]
        host, port = split_host_port(request.target)
        if DomainRules.parse([], deny).decide(host, port or 443) == "deny":
            return f"{request.target} matches sandbox denyDomains"
        return None
    target = Path(request.target)
    inside = lambda roots: any(target == root or root in target.parents for root in roots)  # noqa: E731
    if not inside([repo_root.resolve()]):  # HOME, caches, autostart dirs: beyond what a model may open
        return f"{request.target} is outside the workspace"
    if inside(policy.protected):
        return f"{request.target} is a protected path"
    if inside(policy.deny_read):
        return f"{request.target} is under sandbox denyReadPaths"
    return None


def review_prompt(request: EscalationRequest, rules: list[str], nonce: str | None = None) -> tuple[str, str]:
    """(system prompt, message): the person's rules in the instructions, the request only as quoted data."""
    from gtd.prompts import render

    nonce = nonce or secrets.token_hex(8)
    lines = "\n".join(f"- {' '.join(rule.split())}" for rule in rules) or "(none)"
    system = render("reviewer_system", nonce=nonce, rules=lines)
    data = {"kind": request.kind, "target": request.target, "phase": request.phase.value if request.phase else None,
            "level": request.level.value,
            "requestedLevel": request.requested_level.value if request.requested_level else None,
            "toolCall": request.reason}
    quoted = json.dumps(data, ensure_ascii=True, indent=1).replace("<", "\\u003c").replace(">", "\\u003e")
    message = (f"gtd escalation review. The request, as data:\n<request-data-{nonce}>\n{quoted}\n"
               f"</request-data-{nonce}>\nAnswer with the JSON object only.\n")
    return system, message


def parse_verdict(text: str) -> tuple[str, str] | None:
    """(decision, reason) from the last top-level JSON object in the text, or None if it is not the verdict."""
    decoder = json.JSONDecoder()
    last, index = None, text.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
        except ValueError:
            index = text.find("{", index + 1)
            continue
        last = value
        index = text.find("{", end)
    if not isinstance(last, dict) or last.get("decision") not in DECISIONS or not isinstance(last.get("reason"), str) \
            or not last["reason"].strip():
        return None
    reason = " ".join(last["reason"].split())
    return last["decision"], reason if len(reason) <= MAX_REASON else reason[:MAX_REASON - 1] + "…"


class Reviewer:
    """Asks the configured provider's model about one request at a time (the escalator holds its lock)."""

    def __init__(self, config: Callable[[], Any], provider: Callable[[], Provider], repo_root: Path):
        self._config = config  # the run's current config (it changes when a rule is saved)
        self._provider = provider
        self.repo_root = repo_root

    def out_of_bounds(self, request: EscalationRequest) -> str | None:
        """Why the request is not the reviewer's (see out_of_bounds); when that cannot be worked out (no
        provider, a policy that does not build), it is not the reviewer's either: fails closed."""
        try:
            needs = self._provider().sandbox_needs(self.repo_root)
            return out_of_bounds(request, self._config(), self.repo_root, needs)
        except Exception as exc:  # noqa: BLE001
            return f"its bounds could not be checked ({exc})"

    def review(self, request: EscalationRequest) -> Verdict:
        """The model's verdict, or one without a decision saying why there is none. Never raises, never hangs."""
        try:
            return self._review(request)
        except Exception as exc:  # noqa: BLE001 - a reviewer that cannot run leaves the decision to the person
            return Verdict(None, f"the reviewer could not run: {exc}")

    def _review(self, request: EscalationRequest) -> Verdict:
        from gtd.config.schema import GtdConfig
        from gtd.providers.base import AgentRequest
        from gtd.providers.events import EventKind
        from gtd.providers.runner import run_agent
        from gtd.sandbox.policy.sandbox_policy import build_policy
        from gtd.sandbox.session import open_sandbox

        config = self._config()
        provider = self._provider().for_review()
        if not provider.answers_without_tools:
            return Verdict(None, f"the {provider.name} provider cannot answer without tools")
        seconds = float(config.timeouts.reviewer_seconds)
        model = config.models.for_phase(request.phase) if request.phase else None
        system, message = review_prompt(request, list(config.sandbox.reviewer.rules))
        with tempfile.TemporaryDirectory(prefix="gtd-review-") as empty:
            workspace = Path(empty)
            # The built-in defaults at readonly: nothing the person or the project loosened reaches the reviewer.
            policy = build_policy(GtdConfig(), workspace=workspace, level=Level.READONLY,
                                  needs=provider.sandbox_needs(workspace))
            ask = AgentRequest(phase=request.phase or Phase.PLAN, prompt=message, cwd=workspace, system_prompt=system,
                               model=model, tools=False)
            with open_sandbox(policy) as session:  # no network decider: nothing else is asked
                result = run_agent(provider, ask, session, timeouts=_Timeouts(seconds, seconds, seconds))
        used = next((e.model for e in result.events if e.model), None) or model
        if any(e.kind == EventKind.TOOL_CALL for e in result.events):
            return Verdict(None, "the reviewer called a tool", used)
        if result.stopped:
            return Verdict(None, f"no answer within timeouts.reviewerSeconds ({seconds:g}s)", used)
        if not result.ok:
            return Verdict(None, f"the reviewer failed: {result.error}", used)
        parsed = parse_verdict(result.text())  # one turn without tools: its text is the final text
        if parsed is None:
            return Verdict(None, "the reviewer's answer was not the JSON verdict", used)
        return Verdict(parsed[0], parsed[1], used)
