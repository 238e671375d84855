"""The house rules of issue 25, checked on the source itself: no import cycle between gtd's modules, the
packages layered one way (cli → workflow → escalation → providers → sandbox → config → base), and no
module over 500 lines. Every import counts, also one inside a function: a lazy import hides a cycle from
Python, not from the next reader."""

from __future__ import annotations

import ast
from pathlib import Path

import gtd

ROOT = Path(gtd.__file__).parent
# Lowest first. `base` is gtd's top-level modules; `prompts` is text the workflow reads.
LAYERS = ["base", "config", "sandbox", "providers", "escalation", "workflow", "cli"]
ENTRY_POINTS = {"gtd.__main__"}  # `python -m gtd` runs the CLI: above everything by definition
MAX_LINES = 500


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The gtd modules `name` imports, anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()

    def nearest(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(t for a in node.names if (t := nearest(a.name)))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                candidate = f"{module}.{alias.name}"
                target = candidate if candidate in modules else nearest(module)
                if target:
                    targets.add(target)
    targets.discard(name)
    return targets


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and (ROOT / parts[1]).is_dir():
        return parts[1]
    return "base"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_between_modules():
    assert _cycles(_graph()) == []


def test_packages_import_only_downwards():
    upward = []
    for module, targets in _graph().items():
        if module in ENTRY_POINTS:
            continue
        mine = _layer(module)
        for target in targets:
            theirs = _layer(target)
            if mine in LAYERS and theirs in LAYERS and LAYERS.index(theirs) > LAYERS.index(mine):
                upward.append(f"{module} ({mine}) imports {target} ({theirs})")
    assert upward == []


def test_the_checker_sees_a_lazy_import_and_a_cycle(tmp_path):
    """The checks above can fail: a function-level import closing a loop is a cycle to them."""
    graph = {"gtd.a": {"gtd.b"}, "gtd.b": {"gtd.c"}, "gtd.c": {"gtd.a"}, "gtd.d": set()}
    assert _cycles(graph) == [["gtd.a", "gtd.b", "gtd.c"]]
    lazy = tmp_path / "m.py"
    lazy.write_text("def f():\n    from gtd.sandbox import session\n")
    assert _imports("gtd.m", lazy, {"gtd.m": lazy, "gtd.sandbox": lazy, "gtd.sandbox.session": lazy}) == {"gtd.sandbox.session"}


def test_no_module_over_500_lines():
    long = {str(p.relative_to(ROOT.parent)): n for p in ROOT.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}
