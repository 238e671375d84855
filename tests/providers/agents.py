"""Finding the pinned agent CLIs for e2e tests, and how each one is pointed at the fake model server."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
AGENTS_BIN = REPO / ".tools" / "agents" / "bin"


@dataclass(frozen=True)
class FileTools:
    """A CLI's read/write/edit tools as they appear on the wire, with their argument names."""

    read: str
    write: str
    edit: str
    path: str
    old: str
    new: str


@dataclass(frozen=True)
class AgentSetup:
    name: str
    model: str | None  # as the provider names it; declared for the fake endpoint by the provider
    shell_tool: str  # the shell tool's wire name
    interactive_tool: str | None  # a forbidden tool the fake model can call (None: the CLI has none)
    files: FileTools


SETUPS = {
    "claude": AgentSetup("claude", None, "Bash", "AskUserQuestion",
                         FileTools("Read", "Write", "Edit", "file_path", "old_string", "new_string")),
    "opencode": AgentSetup("opencode", "gtd-openai/fake-model", "bash", "question",
                           FileTools("read", "write", "edit", "filePath", "oldString", "newString")),
    "pi": AgentSetup("pi", "anthropic/fake-model", "bash", None,
                     FileTools("read", "write", "edit", "path", "oldText", "newText")),
}


def require_cli(name: str, monkeypatch) -> None:
    """Put the pinned CLIs on PATH; a missing CLI skips locally but fails in CI (never a silent skip)."""
    if AGENTS_BIN.is_dir():
        monkeypatch.setenv("PATH", f"{AGENTS_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if shutil.which(name) is None:
        message = f"agent CLI '{name}' is not installed: run scripts/install-agents (puts it in {AGENTS_BIN})"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def point_at(server, monkeypatch) -> None:
    """The env that makes every provider talk to the fake server (what the sandbox passes through)."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-key")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "fake-key")
