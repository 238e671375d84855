"""`gtd config show|schema` and `gtd init`."""


import json
from pathlib import Path
from typing import Annotated, Any

import typer

from gtd.cli import options as opt
from gtd.cli.context import stderr
from gtd.paths import PROJECT_CONFIG_NAME, user_config_file
from gtd.terminal_text import markup, write

config_app = typer.Typer(help="Show the effective config or its JSON Schema.\n\nExamples:\n\n\b\n"
                         "  gtd config show --origin\n  gtd config schema > gtd.schema.json", no_args_is_help=True)

USER_TEMPLATE = """\
# gtd user config: applies to every project (a project's .gtdrc.json overrides it).
# Every key: `gtd config schema`. Effective values and where they come from: `gtd config show --origin`.

# provider = "auto"          # auto | scripted | claude | opencode | pi

# [models]                   # model per phase, as the provider names it
# plan = "..."
# build = "..."

# [sandbox.levels.network]   # lists add up across layers; a deny anywhere wins
# allowDomains = ["pypi.org:443"]
"""

PROJECT_COMMENT = [
    "gtd project config, shared with the team (lists add up with your user config; a deny anywhere wins).",
    "Every key: `gtd config schema`. Effective values and their origin: `gtd config show --origin`.",
    "Entries that loosen the sandbox apply only after each user runs `gtd trust`.",
]


@config_app.command("show")
def show(
    origin: Annotated[bool, typer.Option("--origin", help="Also show which layer (file) each value came from.")] = False,
    json_out: opt.JsonOut = False,
    directory: opt.Directory = None,
    provider: opt.Provider = None,
    model: opt.Model = None,
) -> None:
    """Print the effective config (defaults < user < project < flags).

    Examples:

    
      gtd config show --origin   # which file each value came from
      gtd config show --json
    """
    from gtd.cli.config_show import show as show_config

    show_config(origin, json_out, directory, provider, model)


@config_app.command("migrate")
def migrate(
    path: Annotated[Path | None, typer.Argument(help="The file to rewrite; default: every config file gtd finds "
                                                      "that still uses the original gtd's keys.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show the diff; write nothing.")] = False,
    directory: opt.Directory = None,
) -> None:
    """Rewrite config files from the original TypeScript gtd's keys to gtd's (atomically), showing the diff.

    Examples:

    \b
      gtd config migrate --dry-run
      gtd config migrate .gtdrc.json
    """
    import difflib

    from gtd import workspace_files
    from gtd.config.files import read_config_text
    from gtd.config.loader import _original_user_files, find_repo_root
    from gtd.config.original import migrated_text, project_candidates
    from gtd.config.validation import validate_layer
    from gtd.config.writer import atomic_write
    from gtd.errors import ConfigError

    cwd = (directory or Path.cwd()).resolve()
    root = find_repo_root(cwd) or cwd
    if path is not None:
        candidates = [(path if path.is_absolute() else cwd / path)]
    else:
        candidates = [*_original_user_files(), user_config_file(), *project_candidates(root), root / PROJECT_CONFIG_NAME]
    changed = 0
    for candidate in candidates:
        inside = candidate.parent == root
        text = read_config_text(candidate, workspace=root if inside else None)
        if text is None:
            if path is not None:
                raise ConfigError(str(candidate), "", "no such file")
            continue
        if candidate.suffix == ".toml":
            continue  # gtd's own format: nothing of the original's can be in it
        new, warnings = migrated_text(candidate, text)
        if new == text:
            if path is not None:
                stderr.print(f"{markup(str(candidate))}: nothing to migrate", highlight=False)
            continue
        from gtd.config.original import parse_text

        validate_layer(parse_text(candidate, new), str(candidate))
        for warning in warnings:
            stderr.print(f"[yellow]{markup(warning)}[/yellow]", highlight=False)
        write("".join(difflib.unified_diff(text.splitlines(keepends=True), new.splitlines(keepends=True),
                                           fromfile=f"{candidate} (before)", tofile=f"{candidate} (after)")))
        changed += 1
        if dry_run:
            continue
        if inside:
            workspace_files.write_text(root, candidate.name, new)
        else:
            atomic_write(candidate, new)
        stderr.print(f"rewrote {markup(str(candidate))}", highlight=False)
    if not changed and path is None:
        stderr.print("nothing to migrate: no config file uses the original gtd's keys", highlight=False)


@config_app.command("schema")
def schema() -> None:
    """Print the JSON Schema of the config (use it as `$schema` in .gtdrc.json).

    Examples:

    
      gtd config schema > gtd.schema.json
    """
    from gtd.config.schema import GtdConfig

    document = GtdConfig.model_json_schema(by_alias=True, mode="validation")
    document["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    document["title"] = "gtd configuration"
    write(json.dumps(document, indent=2) + "\n")


def init(
    user: Annotated[bool, typer.Option("--user", "--global", help="Scaffold the user config instead of the project's .gtdrc.json (--global: the original gtd's spelling).")] = False,
    directory: opt.Directory = None,
) -> None:
    """Scaffold a minimal, commented config. Never overwrites an existing file.

    Examples:

    
      gtd init            # .gtdrc.json in this repository
      gtd init --user     # your user config
    """
    from gtd import workspace_files
    from gtd.config.loader import find_repo_root
    from gtd.config.writer import atomic_write, write_config_text

    workspace = None
    if user:
        path = user_config_file()
        text = USER_TEMPLATE
    else:
        cwd = (directory or Path.cwd()).resolve()
        root = find_repo_root(cwd) or cwd
        path, workspace = root / PROJECT_CONFIG_NAME, root
        from gtd.workflow.testcmd import propose

        tests = propose(root)
        content: dict[str, Any] = {"$comment": PROJECT_COMMENT, "provider": "auto", "testCommand": tests.command}
        text = json.dumps(content, indent=2) + "\n"
        if tests.command:
            stderr.print(f"proposed testCommand: {markup(tests.command)} (detected from {markup(tests.source)}; edit it if wrong)")
        else:
            stderr.print("[yellow]no test command detected[/yellow]: set `testCommand` in the file, or every build step "
                         "runs untested")
    if workspace_files.exists(workspace, PROJECT_CONFIG_NAME) if workspace else path.exists():
        stderr.print(f"{markup(str(path))} already exists; left unchanged.")
        return
    if workspace:
        write_config_text(path, text, workspace=workspace)
    else:
        atomic_write(path, text)
    stderr.print(f"wrote {markup(str(path))}")


def register(app: typer.Typer) -> None:
    app.add_typer(config_app, name="config")
    app.command("init")(init)
