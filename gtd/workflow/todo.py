"""TODO.md: the plan the agent writes and gtd checks, ticks and finally removes.

Expected shape:

    # Title
    ## Action items
    - [ ] Do something
      - Tests: how we know it works
    ## Open questions
    ## Learnings
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from gtd import workspace_files

TODO_FILE = "TODO.md"
SECTIONS = ("Action items", "Open questions", "Learnings")

_ITEM = re.compile(r"^- \[(?P<mark>[ xX])\] (?P<text>.+?)\s*$")
_SUB_BULLET = re.compile(r"^\s+[-*] (?P<text>.+?)\s*$")
_TESTS = re.compile(r"^tests?\s*:", re.IGNORECASE)


@dataclass
class Item:
    text: str
    done: bool
    line: int  # 0-based line index of the checkbox line
    details: list[str] = field(default_factory=list)

    @property
    def tests(self) -> str | None:
        for detail in self.details:
            if _TESTS.match(detail):
                return detail.split(":", 1)[1].strip()
        return None


@dataclass
class Todo:
    title: str | None
    items: list[Item]
    sections: dict[str, list[str]]  # section name (as in SECTIONS) -> its non-empty lines
    lines: list[str]

    @property
    def open_questions(self) -> list[str]:
        return [line.lstrip("-* ").strip() for line in self.sections.get("Open questions", [])
                if line.strip() and line.strip() not in ("-", "*") and not line.strip().lower().startswith(("none", "_none", "(none"))]

    @property
    def learnings(self) -> list[str]:
        return [line for line in self.sections.get("Learnings", []) if line.strip()]

    def unchecked(self) -> list[Item]:
        return [item for item in self.items if not item.done]

    def errors(self) -> list[str]:
        """What is wrong with the structure, in words the agent can act on."""
        problems = []
        if not self.title:
            problems.append("missing a title: the first heading must be `# <title>`")
        for name in SECTIONS:
            if name not in self.sections:
                problems.append(f"missing the section `## {name}`")
        if "Action items" in self.sections and not self.items:
            problems.append("`## Action items` has no items: write each as `- [ ] <item>`")
        for number, item in enumerate(self.items, 1):
            if item.tests is None:
                problems.append(f"action item {number} ('{item.text}') has no `Tests:` sub-bullet")
        return problems

    def ticked(self, items: list[Item]) -> str:
        """The file text with these items checked; everything else byte-for-byte the same."""
        lines = list(self.lines)
        for item in items:
            lines[item.line] = lines[item.line].replace("- [ ]", "- [x]", 1)
        return "".join(lines)


def parse_todo(text: str) -> Todo:
    lines = text.splitlines(keepends=True)
    title = None
    sections: dict[str, list[str]] = {}
    items: list[Item] = []
    current: str | None = None
    for index, raw in enumerate(lines):
        line = raw.rstrip("\n")
        if line.startswith("# ") and title is None:
            title = line[2:].strip() or None
            continue
        if line.startswith("## "):
            heading = line[3:].strip()
            current = next((name for name in SECTIONS if name.lower() == heading.lower()), heading)
            sections.setdefault(current, [])
            continue
        if current is None:
            continue
        if current == "Action items":
            match = _ITEM.match(line)
            if match:
                items.append(Item(match["text"], match["mark"] != " ", index))
                continue
            sub = _SUB_BULLET.match(line)
            if sub and items:
                items[-1].details.append(sub["text"])
                continue
        if line.strip():
            sections[current].append(line)
    return Todo(title, items, sections, lines)


def read_todo(repo: Path) -> Todo | None:
    text = workspace_files.read_text(repo, TODO_FILE)
    return None if text is None else parse_todo(text)
