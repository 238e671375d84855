"""TODO.md: the plan the agent writes and gtd checks, ticks and finally removes.

Expected shape:

    # Title
    ## Action items
    - [ ] Do something
      - Tests: how we know it works
    ## Open questions
    ## Learnings

The original TypeScript gtd's plans are accepted for building as they are: `### package`
headings group items (one build step per package), items may have no sub-bullets and no
`Tests:` line, and the Open questions / Learnings sections may be missing. What gtd asks of a
plan its agent writes (errors()) is stricter than what it needs to build one (build_errors()).
"""

from __future__ import annotations

import re
from pathlib import Path

from gtd import workspace_files
from gtd.record import field, record

TODO_FILE = "TODO.md"
SECTIONS = ("Action items", "Open questions", "Learnings")

_ITEM = re.compile(r"^[-*+] \[(?P<mark>[ xX])\] (?P<text>.+?)\s*$")
_SUB_BULLET = re.compile(r"^\s+[-*] (?P<text>.+?)\s*$")
_TESTS = re.compile(r"^tests?\s*:", re.IGNORECASE)
_PACKAGE = re.compile(r"^###\s+(?P<title>.+?)\s*$")
_BLOCKQUOTE = re.compile(r"^\s*>")
_TODO_COMMENT = re.compile(r"<!--\s*TODO:", re.IGNORECASE)


@record
class Item:
    text: str
    done: bool
    line: int  # 0-based line index of the checkbox line
    details: list[str] = field(default_factory=list)
    package: str | None = None  # the `### package` heading it sits under (the original gtd's grouping)
    raw_details: list[str] = field(default_factory=list)  # every indented line under the item, as written

    @property
    def tests(self) -> str | None:
        for detail in self.details:
            if _TESTS.match(detail):
                return detail.split(":", 1)[1].strip()
        return None


@record
class Todo:
    title: str | None
    items: list[Item]
    sections: dict[str, list[str]]  # section name (as in SECTIONS) -> its non-empty lines
    lines: list[str]
    order: list[str] = field(default_factory=list)  # `##` sections in the order they appear

    @property
    def open_questions(self) -> list[str]:
        return [line.lstrip("-* ").strip() for line in self.sections.get("Open questions", [])
                if line.strip() and line.strip() not in ("-", "*") and not line.strip().lower().startswith(("none", "_none", "(none"))]

    @property
    def learnings(self) -> list[str]:
        return [line for line in self.sections.get("Learnings", []) if line.strip()]

    def unchecked(self) -> list[Item]:
        return [item for item in self.items if not item.done]

    def next_package(self) -> list[Item]:
        """The unchecked items of the next build step when the plan groups items under `###`
        headings (the original gtd's packages); empty when it does not."""
        pending = self.unchecked()
        if not pending or pending[0].package is None:
            return []
        return [item for item in pending if item.package == pending[0].package]

    def build_errors(self) -> list[str]:
        """What stops gtd from building this plan at all (a looser check than errors())."""
        if "Action items" not in self.sections:
            return ["missing the section `## Action items`"]
        if not self.items:
            return ["`## Action items` has no items: write each as `- [ ] <item>`"]
        return []

    def errors(self) -> list[str]:
        """What is wrong with a plan the agent wrote, in words the agent can act on (lint rules)."""
        problems = []
        if not self.title:
            problems.append("missing a title: the first heading must be `# <title>`")
        for name in SECTIONS:
            if name not in self.sections:
                problems.append(f"missing the section `## {name}`")
        known = [name for name in self.order if name in SECTIONS]
        for before, after in zip(known, known[1:]):
            if SECTIONS.index(after) <= SECTIONS.index(before):
                problems.append(f"section order: `## {after}` must come before `## {before}` "
                                f"(the order is {', '.join(SECTIONS)})")
        if "Action items" in self.sections and not self.items:
            problems.append("`## Action items` has no items: write each as `- [ ] <item>`")
        for number, item in enumerate(self.items, 1):
            if item.tests is None and not item.done:
                problems.append(f"action item {number} ('{item.text}') has no `Tests:` sub-bullet")
            if item.done and any(_TODO_COMMENT.search(line) for line in item.raw_details):
                problems.append(f"action item {number} ('{item.text}') is checked but still has a `<!-- TODO: -->` "
                                "comment: resolve it or remove it")
        for index, line in enumerate(self.lines):
            if _BLOCKQUOTE.match(line):
                problems.append(f"line {index + 1} is a blockquote (`> ...`), feedback left over: work it into "
                                "the plan and remove the blockquote")
        return problems

    def ticked(self, items: list[Item]) -> str:
        """The file text with these items checked; everything else byte-for-byte the same."""
        lines = list(self.lines)
        for item in items:
            lines[item.line] = lines[item.line].replace("[ ]", "[x]", 1)
        return "".join(lines)


OPTIONAL_SECTIONS = ("Open questions", "Learnings")


def with_optional_sections(text: str) -> str:
    """The plan with the empty `## Open questions` / `## Learnings` sections it lacks added in their
    place (the original gtd did not require them; gtd's plan always has them). Unchanged when
    `## Action items` is missing: that plan is not accepted anyway."""
    todo = parse_todo(text)
    if "Action items" not in todo.sections:
        return text
    lines = list(todo.lines)
    for name in OPTIONAL_SECTIONS:
        if name in todo.sections:
            continue
        later = [i for i, line in enumerate(lines) if line.startswith("## ") and
                 line[3:].strip().lower() in [s.lower() for s in SECTIONS[SECTIONS.index(name) + 1:]]]
        block = [f"## {name}\n", "\n"]
        if later:
            lines[later[0]:later[0]] = block
        else:
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            lines += (["\n"] if lines and lines[-1].strip() else []) + block
    return "".join(lines).rstrip("\n") + "\n"


def parse_todo(text: str) -> Todo:
    lines = text.splitlines(keepends=True)
    title = None
    sections: dict[str, list[str]] = {}
    items: list[Item] = []
    current: str | None = None
    package: str | None = None
    order: list[str] = []
    for index, raw in enumerate(lines):
        line = raw.rstrip("\n")
        if line.startswith("# ") and title is None:
            title = line[2:].strip() or None
            continue
        if line.startswith("## "):
            heading = line[3:].strip()
            current = next((name for name in SECTIONS if name.lower() == heading.lower()), heading)
            sections.setdefault(current, [])
            order.append(current)
            package = None
            continue
        if current is None:
            continue
        if current == "Action items":
            heading = _PACKAGE.match(line)
            if heading:
                package = heading["title"]
            match = _ITEM.match(line)
            if match:
                items.append(Item(match["text"], match["mark"] != " ", index, package=package))
                continue
            if items and line.startswith((" ", "\t")) and line.strip() and items[-1].line < index:
                items[-1].raw_details.append(line)
            sub = _SUB_BULLET.match(line)
            if sub and items:
                items[-1].details.append(sub["text"])
                continue
        if line.strip():
            sections[current].append(line)
    return Todo(title, items, sections, lines, order)


def read_todo_text(repo: Path) -> str | None:
    """TODO.md's text, or None when there is none."""
    return workspace_files.read_text(repo, TODO_FILE)


def write_todo(repo: Path, text: str) -> None:
    """Replace TODO.md's text."""
    workspace_files.write_text(repo, TODO_FILE, text)


def remove_todo(repo: Path) -> None:
    workspace_files.remove(repo, TODO_FILE)


def read_todo(repo: Path) -> Todo | None:
    text = read_todo_text(repo)
    return None if text is None else parse_todo(text)
