"""The scripted agent: a stand-in for a model-driven CLI that replays a script of tool actions.

It runs where a real agent would (inside the sandbox, under the same guards), so the whole
workflow can be exercised offline. Usage:

    python -m gtd.providers.scripted_agent --phase build [--session ID] SCRIPT.json  < prompt

Script: {"plan": [TURN...], "build": [TURN...], "learn": [TURN...]}, where
TURN = {"when": "substring" | ["all", "of", "these"], "actions": [ACTION...], "say": "text"}
and ACTION = {"shell": "cmd"} | {"write": {"path": p, "content": c}} | {"tool": {"name": n, "input": {...}}}.
The first turn of the phase whose `when` substrings all occur in the prompt is played.
Output: one JSON event (gtd.providers.events.AgentEvent.to_dict) per line.
The env var GTD_SCRIPTED_TURNS, when set, holds the phase's turns as JSON and replaces the
file (the host reads the script: a file in the host's /tmp is invisible inside the sandbox).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from gtd.providers.events import AgentEvent, EventKind

TURNS_ENV = "GTD_SCRIPTED_TURNS"
OUTPUT_LIMIT = 20_000  # characters of a command's output put in its TOOL_RESULT
UNKNOWN_TOOL_PAUSE = 2.0  # a simulated tool "runs" this long, so a guard has time to act first


class ScriptError(ValueError):
    """The script is malformed: says where."""


def validate_script(data: Any, *, source: str = "script") -> dict[str, list[dict]]:
    """Check the whole script's shape; returns it. Raises ScriptError naming the bad place."""
    if not isinstance(data, dict):
        raise ScriptError(f"{source}: must be a JSON object with keys plan/build/learn")
    for phase, turns in data.items():
        if phase not in ("plan", "build", "learn"):
            raise ScriptError(f"{source}: unknown phase '{phase}' (expected plan, build, learn)")
        if not isinstance(turns, list):
            raise ScriptError(f"{source}: {phase} must be a list of turns")
        for i, turn in enumerate(turns):
            validate_turn(turn, where=f"{source}: {phase}[{i}]")
    return data


def validate_turn(turn: Any, *, where: str) -> None:
    if not isinstance(turn, dict):
        raise ScriptError(f"{where}: a turn must be an object")
    unknown = set(turn) - {"when", "actions", "say"}
    if unknown:
        raise ScriptError(f"{where}: unknown keys {sorted(unknown)}")
    when = turn.get("when")
    if when is not None and not isinstance(when, str) and not (
        isinstance(when, list) and all(isinstance(w, str) for w in when)
    ):
        raise ScriptError(f"{where}.when: must be a string or a list of strings")
    if "say" in turn and not isinstance(turn["say"], str):
        raise ScriptError(f"{where}.say: must be a string")
    actions = turn.get("actions", [])
    if not isinstance(actions, list):
        raise ScriptError(f"{where}.actions: must be a list")
    for j, action in enumerate(actions):
        at = f"{where}.actions[{j}]"
        if not isinstance(action, dict) or len(action) != 1:
            raise ScriptError(f"{at}: must be an object with exactly one of shell, write, tool")
        (kind, value), = action.items()
        if kind == "shell":
            if not isinstance(value, str):
                raise ScriptError(f"{at}.shell: must be a string")
        elif kind == "write":
            if not isinstance(value, dict) or not isinstance(value.get("path"), str) or not isinstance(value.get("content"), str):
                raise ScriptError(f"{at}.write: must be {{\"path\": string, \"content\": string}}")
        elif kind == "tool":
            if not isinstance(value, dict) or not isinstance(value.get("name"), str):
                raise ScriptError(f"{at}.tool: must be {{\"name\": string, \"input\": object}}")
        else:
            raise ScriptError(f"{at}: unknown action '{kind}' (expected shell, write, tool)")


def pick_turn(turns: list[dict], prompt: str) -> dict | None:
    """The first turn whose `when` substrings all occur in the prompt (no `when` matches anything)."""
    for turn in turns:
        when = turn.get("when")
        needles = [when] if isinstance(when, str) else (when or [])
        if all(n in prompt for n in needles):
            return turn
    return None


# The words gtd resumes a session with once a refusal was settled (gtd/prompts/resume_after_escalation.md).
AFTER_APPROVAL = "Continue the task from where you stopped"


def session_turn(turns: list[dict], session_id: str) -> dict | None:
    """The turn a session started with (its id ends in `.turnN`), or None."""
    _, _, tail = session_id.rpartition(".turn")
    return turns[int(tail)] if tail.isdigit() and int(tail) < len(turns) else None


def _emit(event: AgentEvent) -> None:
    sys.stdout.write(json.dumps(event.to_dict()) + "\n")
    sys.stdout.flush()


def _clip(text: str) -> str:
    return text if len(text) <= OUTPUT_LIMIT else text[:OUTPUT_LIMIT] + f"\n[... {len(text) - OUTPUT_LIMIT} more characters]"


def _shell_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop(TURNS_ENV, None)
    return env


def run_action(action: dict, index: int) -> None:
    (kind, value), = action.items()
    tool_id = f"call_{index}"
    if kind == "shell":
        _emit(AgentEvent(EventKind.TOOL_CALL, tool="shell", tool_input={"command": value}, tool_id=tool_id))
        try:
            done = subprocess.run(["/bin/sh", "-c", value], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, env=_shell_env())
            text = done.stdout.decode("utf-8", "replace")
            if done.returncode:
                text += f"\n[exit status {done.returncode}]"
            _emit(AgentEvent(EventKind.TOOL_RESULT, tool="shell", tool_id=tool_id, text=_clip(text),
                             is_error=done.returncode != 0))
        except OSError as exc:
            _emit(AgentEvent(EventKind.TOOL_RESULT, tool="shell", tool_id=tool_id, text=str(exc), is_error=True))
    elif kind == "write":
        path, content = value["path"], value["content"]
        _emit(AgentEvent(EventKind.TOOL_CALL, tool="write", tool_input={"path": path, "content": content}, tool_id=tool_id))
        try:
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            _emit(AgentEvent(EventKind.TOOL_RESULT, tool="write", tool_id=tool_id, text=f"wrote {len(content)} characters to {path}"))
        except OSError as exc:
            _emit(AgentEvent(EventKind.TOOL_RESULT, tool="write", tool_id=tool_id, text=f"{path}: {exc}", is_error=True))
    else:
        import time

        name = value["name"]
        _emit(AgentEvent(EventKind.TOOL_CALL, tool=name, tool_input=value.get("input") or {}, tool_id=tool_id))
        time.sleep(UNKNOWN_TOOL_PAUSE)
        _emit(AgentEvent(EventKind.TOOL_RESULT, tool=name, tool_id=tool_id, text=f"tool '{name}' is not available",
                         is_error=True))


def load_turns(script_path: str, phase: str) -> list[dict]:
    inline = os.environ.get(TURNS_ENV)
    if inline is not None:
        turns = json.loads(inline)
        for i, turn in enumerate(turns):
            validate_turn(turn, where=f"{TURNS_ENV}[{i}]")
        return turns
    data = validate_script(json.loads(Path(script_path).read_text()), source=script_path)
    return data.get(phase, [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripted_agent", description=__doc__.splitlines()[0])
    parser.add_argument("--phase", required=True, choices=["plan", "build", "learn"])
    parser.add_argument("--session", default=None, help="resume this session id (kept in the output)")
    parser.add_argument("script")
    args = parser.parse_args(argv)
    prompt = sys.stdin.read()
    try:
        turns = load_turns(args.script, args.phase)
    except (OSError, ValueError) as exc:
        session_id = args.session or str(uuid.uuid4())
        _emit(AgentEvent(EventKind.START, session_id=session_id, model="scripted", tools=["shell", "write"]))
        _emit(AgentEvent(EventKind.ERROR, text=f"cannot read the script: {exc}", is_error=True))
        _emit(AgentEvent(EventKind.END, session_id=session_id, is_error=True))
        return 1
    turn = pick_turn(turns, prompt)
    if turn is None and args.session and AFTER_APPROVAL in prompt:
        # Resumed after an approval: a real agent retries what was refused; the scripted one plays its
        # session's turn again (its writes are repeatable). Any other resumed prompt needs a turn of its own.
        turn = session_turn(turns, args.session)
    # A new session's id names its turn, so that a resumed session knows it.
    session_id = args.session or (f"{uuid.uuid4()}.turn{turns.index(turn)}" if turn is not None else str(uuid.uuid4()))
    _emit(AgentEvent(EventKind.START, session_id=session_id, model="scripted", tools=["shell", "write"]))
    if turn is None:
        _emit(AgentEvent(EventKind.ERROR, text=f"the script has no {args.phase} turn matching this prompt", is_error=True))
        _emit(AgentEvent(EventKind.END, session_id=session_id, is_error=True))
        return 1
    for i, action in enumerate(turn.get("actions", [])):
        run_action(action, i)
    if turn.get("say"):
        _emit(AgentEvent(EventKind.TEXT, text=turn["say"]))
    # Token counts a model would report, made up deterministically (about 4 characters a token).
    said = len(turn.get("say", "")) + len(json.dumps(turn.get("actions", [])))
    _emit(AgentEvent(EventKind.END, session_id=session_id, usage={"input": len(prompt) // 4, "output": said // 4},
                     cost_usd=0.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
