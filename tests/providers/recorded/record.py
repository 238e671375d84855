"""Re-record the real CLI streams parsed by test_recorded_streams.py (run after bumping a pinned version):

    .venv/bin/python tests/providers/recorded/record.py

Each CLI runs unsandboxed against the fake model server, without gtd's guard (so the stream shows
what the CLI itself does); stdout is saved verbatim with the exit status in a .meta.json file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent)]

from agents import AGENTS_BIN, SETUPS  # noqa: E402
from fakemodel.server import FakeModelServer, say, shell, tool  # noqa: E402
from gtd.config.schema import Phase  # noqa: E402
from gtd.providers.base import AgentRequest  # noqa: E402
from gtd.providers.registry import _load  # noqa: E402

SCENARIOS = {
    "shell": lambda s, setup: s.script([shell("echo recorded-output"), say("Recorded run finished.")]),
    "forbidden": lambda s, setup: s.script([tool(setup.interactive_tool or "AskUserQuestion", {"questions": []}),
                                            say("gave up asking")]),
    "api-error": lambda s, setup: s.fail(401, "invalid x-api-key (recorded)"),
}


def main() -> None:
    os.environ["PATH"] = f"{AGENTS_BIN}{os.pathsep}{os.environ['PATH']}"
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer() as server:
        os.environ.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="fake-key",
                          OPENAI_BASE_URL=server.url + "/v1", OPENAI_API_KEY="fake-key",
                          GTD_AGENT_DIR=str(Path(tmp) / "agents"))
        work = Path(tmp) / "work"
        work.mkdir()
        for name, setup in SETUPS.items():
            provider = _load(name)()
            version = provider.version()
            for scenario, arrange in SCENARIOS.items():
                arrange(server, setup)
                spec = provider.command(AgentRequest(phase=Phase.BUILD, prompt="Record this run.", cwd=work,
                                                     model=setup.model))
                done = subprocess.run(spec.argv, cwd=work, env={**os.environ, **spec.env}, input=spec.stdin_data or b"",
                                      capture_output=True, timeout=180)
                (HERE / f"{name}-{scenario}.jsonl").write_bytes(done.stdout)
                meta = {"cli": name, "version": version, "scenario": scenario, "exit_code": done.returncode}
                (HERE / f"{name}-{scenario}.meta.json").write_text(json.dumps(meta, indent=2) + "\n")
                print(name, scenario, "exit", done.returncode, len(done.stdout.splitlines()), "lines")


if __name__ == "__main__":
    main()
