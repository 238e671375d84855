"""`gtd config show`: the effective config, plain text or JSON, printed without typer or rich.

People and scripts run it often, so it starts fast (issue 13): gtd's entry point (gtd/cli/entry.py)
calls `show` directly, the typer command calls the same `show`; the config comes from the
validated-load cache (no pydantic models).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gtd.terminal_text import write


def show(origin: bool, json_out: bool, directory: Path | None, provider: str | None, model: str | None) -> None:
    """Print the effective config (defaults < user < project < flags), with each value's layer if `origin`."""
    from gtd.cli.context import load_at
    from gtd.cli.run_options import config_flags
    from gtd.config.merge import leaf_keys

    loaded = load_at((directory or Path.cwd()).resolve(), config_flags(provider, model))
    values = {k: v for k, v in loaded.values.items() if k not in ("$schema", "$comment")}  # notes for editors/people
    origins = loaded.origins()
    if json_out:
        payload: dict[str, Any] = {"config": values, "files": [str(f) for f in loaded.files], "warnings": loaded.warnings}
        if origin:
            payload["origins"] = origins
        write(json.dumps(payload, indent=2) + "\n")  # plain, not rich's print_json: rich would double the time
        return
    header = ["key", "value"] + (["from"] if origin else [])
    rows = [[key, json.dumps(value)] + ([origins.get(key, "defaults")] if origin else [])
            for key, value in leaf_keys(values).items()]
    write(columns(header, rows))  # origins name files: their control characters are shown, not sent


def columns(header: list[str], rows: list[list[str]], stream=None) -> str:
    """A plain table: the first column (the key, the one thing a reader must see whole) never wraps,
    the others fold to the terminal's width. Off a terminal (a file, a pipe, a script) nothing folds:
    each row is one line, whatever COLUMNS says. Plain text on purpose: rich's Table costs more
    start-up time than the rest of `gtd config show`."""
    import shutil
    import sys
    import textwrap

    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    on_terminal = (stream or sys.stdout).isatty()
    room = shutil.get_terminal_size().columns - sum(2 + w for w in widths[:1]) - 2 * (len(header) - 1)
    folding = list(range(1, len(header))) if on_terminal else []
    while folding and sum(widths[i] for i in folding) > room:  # narrow columns keep their width, wide ones share the rest
        share = max(10, room // len(folding))
        narrow = [i for i in folding if widths[i] <= share]
        if not narrow:
            for i in folding:
                widths[i] = share
            break
        room -= sum(widths[i] for i in narrow)
        folding = [i for i in folding if i not in narrow]
    lines = []
    for row in table:
        cells = [[row[0]]] + [(textwrap.wrap(cell, w, break_on_hyphens=False) if on_terminal else [cell]) or [""]
                              for cell, w in zip(row[1:], widths[1:])]
        for i in range(max(len(c) for c in cells)):
            parts = [(c[i] if i < len(c) else "").ljust(w) for c, w in zip(cells, widths)]
            lines.append((" " + "  ".join(parts)).rstrip())
    return "\n".join(lines) + "\n"


