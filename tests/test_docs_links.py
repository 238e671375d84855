"""Every relative link in README.md and docs/*.md points to a file that exists and, with `#anchor`, to a
heading that exists there (anchors spelled as GitHub spells them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`+[^`]*`+")


def prose_lines(text: str):
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: link text kept, lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def broken_links(path: Path) -> list[str]:
    problems = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not this repository's
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(REPO)}:{number}: {target}"
            if not dest.exists():
                problems.append(f"{where}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{where}: no heading with this anchor in {dest.name}")
    return problems


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(path):
    assert broken_links(path) == []


def test_the_docs_are_all_checked():
    names = {p.name for p in DOCS}
    assert {"README.md", "security-model.md", "config.md", "providers.md", "troubleshooting.md"} <= names


def test_a_missing_file_and_a_missing_anchor_are_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(__import__(__name__), "REPO", tmp_path)
    (tmp_path / "other.md").write_text("# Other page\n\n## JSON events (--json)\n\n## Twice\n\n## Twice\n")
    page = tmp_path / "page.md"
    page.write_text("See [a](other.md#json-events---json), [b](other.md#twice-1), [c](#here) and `[d](gone.md)`.\n"
                    "\n## Here\n\n"
                    "Broken: [e](gone.md), [f](other.md#nope), [g](#there).\n"
                    "```\n[h](gone-too.md)\n```\n[i](https://example.com/x.md)\n")
    assert broken_links(page) == [
        "page.md:5: gone.md: no such file",
        "page.md:5: other.md#nope: no heading with this anchor in other.md",
        "page.md:5: #there: no heading with this anchor in page.md",
    ]


def test_the_readme_stays_short_and_opens_with_the_two_commands():
    """Issue 25: a cold reader finds install and a first run; detail lives in docs/."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move detail into docs/"
    assert lines[0] == "```sh" and lines[3] == "```"
    assert lines[1].startswith("scripts/demo ") and lines[2].startswith("scripts/test ")
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)", "\n".join(lines)))
    topics = {"security-model.md", "config.md", "providers.md", "troubleshooting.md", "migrating-from-gtd.md"}
    assert topics <= linked, f"the README links the issue's topics: {topics - linked} missing"
