"""terminal_text: what it makes visible, and that gtd prints only through it."""

from __future__ import annotations

import ast
import io
from pathlib import Path

from gtd.terminal_text import SafeConsole, markup, visible

GTD = Path(__file__).resolve().parents[2] / "gtd"


def test_controls_become_visible_and_layout_characters_stay():
    assert visible("a\x1b]52;c;SGk=\x07b") == "a\\x1b]52;c;SGk=\\x07b"
    assert visible("x\x9b2Ay\x7f") == "x\\x9b2Ay\\x7f"
    assert visible("over\rwrite") == "over\\rwrite"
    assert visible("abc\u202edef\u2066") == "abc\\u202edef\\u2066"  # bidi reordering
    assert visible("line 1\n\tline 2") == "line 1\n\tline 2"
    assert visible("line 1\n\tline 2", one_line=True) == "line 1\\n\\tline 2"
    assert visible("naïve ✓ 日本") == "naïve ✓ 日本"
    # A file name that is not UTF-8 reaches gtd with its bytes as lone surrogates (surrogateescape):
    # written back out they would be the raw bytes again (0x9b is CSI on an 8-bit terminal).
    assert visible(b"a\x9b31m\xff".decode("utf-8", "surrogateescape")) == "a\\udc9b31m\\udcff"


def test_markup_is_shown_as_text():
    out = io.StringIO()
    console = SafeConsole(file=out, force_terminal=True, color_system=None)
    console.print(f"tool {markup('[bold red]x[/bold red] [link=http://evil.test]y[/link]')}")
    assert out.getvalue() == "tool [bold red]x[/bold red] [link=http://evil.test]y[/link]\n"


def test_the_console_net_catches_what_a_call_site_forgot_but_keeps_its_own_styling():
    out = io.StringIO()
    console = SafeConsole(file=out, force_terminal=True, color_system="standard")
    console.print("[red]refused[/red] a\x1b[2Ab\x9b", highlight=False)
    assert out.getvalue() == "\x1b[31mrefused\x1b[0m a\\x1b[2Ab\\x9b\n"
    out.truncate(0), out.seek(0)
    console.print_json(data={"name": "a\x9bb\x1b"})
    assert "\x9b" not in out.getvalue() and "\\u009b" in out.getvalue()


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            target = ast.unparse(func)
            yield node.lineno, name, target


def test_gtd_prints_only_through_terminal_text():
    """Every rich Console is a SafeConsole, and nothing writes to stdout/stderr around it (print(),
    sys.stdout.write, typer.echo). Exempt: programs that run inside the sandbox as the command's own
    process -- the scripted agent (its stdout is its event stream to gtd) and the sandbox launcher
    (it writes only its own one-line failure, and must import nothing)."""
    offenders = []
    for path in sorted(GTD.rglob("*.py")):
        relative = path.relative_to(GTD).as_posix()
        if relative in ("terminal_text.py", "providers/scripted_agent.py", "sandbox/linux/launch.py"):
            continue
        for line, name, target in _calls(ast.parse(path.read_text())):
            if name == "Console" or target in ("print", "typer.echo", "click.echo", "sys.stderr.write") or \
                    (target == "sys.stdout.write" and relative != "cli/sandbox_cmd.py"):
                offenders.append(f"gtd/{relative}:{line}: {target}(...)")
    assert not offenders, "print through gtd.terminal_text instead:\n" + "\n".join(offenders)
