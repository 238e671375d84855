"""What the agent chose (a path, its tool call) cannot fake a line of the approval panel (issue 22, class 7b).

A path with a newline in it was printed raw: the person saw a line the agent wrote, inside gtd's
own panel, e.g. a reassuring `why:` or a different rule. Every agent-supplied string in the panel and
the lines around it is one line, its newline and other controls shown as escapes.
"""

from __future__ import annotations

import io

from gtd.audit import AuditLog
from gtd.config.schema import Level, Phase
from gtd.escalation.escalator import Decision, Escalator
from gtd.escalation.request import EscalationRequest
from gtd.terminal_text import SafeConsole

FAKE = "why: a routine cache write, safe to allow"


def _lines(out: io.StringIO) -> list[str]:
    return out.getvalue().splitlines()


def test_a_newline_in_a_path_or_reason_shows_as_an_escape_inside_its_own_line(repo):
    target = str(repo / f"notes\n{FAKE}\rproject (.gtdrc.json, committed): nothing\u2028x")
    request = EscalationRequest.create(kind="path", target=target, phase=Phase.BUILD, level=Level.READONLY,
                                       reason=f"write call\n{FAKE}")
    out = io.StringIO()
    escalator = Escalator(repo, interactive=True, audit=AuditLog(repo), phase=Phase.BUILD,
                          console=SafeConsole(file=out, width=600), prompt_input=lambda text: "d")
    assert escalator.decide(request) == Decision.DENY

    lines = _lines(out)
    panel = [line for line in lines if line.startswith("│")]
    assert len(panel) == 5, "\n".join(lines)  # what, why, a blank line, the project rule, the user rule: nothing more
    labels = [line.strip("│ ").split(" ")[0] for line in panel]
    assert labels == ["blocked:", "why:", "", "project", "user"], panel
    assert "notes\\nwhy: a routine" in panel[0] and "\\r" in panel[0]
    assert "write call\\nwhy: a routine" in panel[1]
    assert not any(line.lstrip("│ ").startswith(FAKE) for line in lines)


def test_a_value_too_long_for_the_terminal_wraps_in_its_own_column(repo):
    """A path with spaces, as long as the terminal is wide, wraps onto a line of its own that starts with
    whatever the agent put there; in its column, that line starts past gtd's labels, at every width."""
    target = str(repo / ("x" * 30 + " " + FAKE))
    request = EscalationRequest.create(kind="path", target=target, phase=Phase.BUILD, level=Level.READONLY,
                                       reason="write call")
    wrapped_before_the_fake = 0
    head = len(f"│ blocked: write {repo}/{'x' * 30} ")
    for width in range(head - 3, head + 8):
        out = io.StringIO()
        escalator = Escalator(repo, interactive=True, audit=AuditLog(repo), phase=Phase.BUILD,
                              console=SafeConsole(file=out, width=width), prompt_input=lambda text: "d")
        assert escalator.decide(request) == Decision.DENY
        panel = [line[2:].rstrip(" │") for line in _lines(out) if line.startswith("│")]
        assert [line for line in panel if line.startswith("why:")] == ["why:     write call"], panel  # gtd's only
        wrapped_before_the_fake += any(line.lstrip("│").startswith(" " * 10 + FAKE[:4]) for line in _lines(out))
    assert wrapped_before_the_fake  # the agent's text did start a wrapped line: in the value column


def test_the_not_grantable_line_stays_one_line(repo):
    (repo / "link").symlink_to("/tmp")
    request = EscalationRequest.create(kind="path", target=str(repo / f"link/x\n{FAKE}"), phase=Phase.BUILD,
                                       level=Level.READWRITE, reason="write call")
    out = io.StringIO()
    escalator = Escalator(repo, interactive=True, audit=AuditLog(repo), phase=Phase.BUILD,
                          console=SafeConsole(file=out, width=400), prompt_input=lambda text: "p")
    assert escalator.decide(request) == Decision.DENY
    [line] = _lines(out)
    assert line.startswith("not grantable:") and f"x\\n{FAKE}" in line
