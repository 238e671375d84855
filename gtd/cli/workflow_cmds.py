"""`gtd`, `gtd plan`, `gtd build`, `gtd learn`: run the workflow."""


import json
from typing import Annotated, Optional

import typer

from gtd.cli import options as opt
from gtd.cli.context import stdout
from gtd.cli.options import RunOptions
from gtd.cli.workflow_run import next_step, run_phase, workflow  # noqa: F401 - next_step: the root command's


RUN_COMMANDS = ("plan", "build", "learn")  # the commands that take the run options before them too


def register(app: typer.Typer) -> None:
    @app.command("plan")
    def plan_cmd(
        typer_ctx: typer.Context,
        goal: Annotated[Optional[str], typer.Argument(help="What you want done (appended to TODO.md as the seed).")] = None,
        provider: opt.Provider = None, model: opt.Model = None, level: opt.LevelOpt = None,
        non_interactive: opt.NonInteractive = False, quiet: opt.Quiet = False, verbose: opt.Verbose = False,
        directory: opt.Directory = None, json_events: opt.JsonEvents = False,
    ) -> None:
        """Run the plan phase: the agent writes TODO.md; gtd checks it and commits.

        Examples:

        
          gtd plan "Add a --json flag to the export command"
          gtd plan --provider claude --model opus
          gtd plan --json > events.jsonl   # JSONL events for scripts
        """
        run_phase(RunOptions(provider, model, level, non_interactive, quiet, verbose, directory,
                             json_events).merged(typer_ctx.obj), "plan", goal=goal)

    @app.command("build")
    def build_cmd(
        typer_ctx: typer.Context,
        one: Annotated[bool, typer.Option("--one", "--single", help="Build only the next item (package) and stop.")] = False,
        provider: opt.Provider = None, model: opt.Model = None, level: opt.LevelOpt = None,
        non_interactive: opt.NonInteractive = False, quiet: opt.Quiet = False, verbose: opt.Verbose = False,
        directory: opt.Directory = None, json_events: opt.JsonEvents = False, build_on_red: opt.BuildOnRed = False,
    ) -> None:
        """Run the build phase: item by item, tests after each, gtd ticks and commits (capped by maxBuildSteps).

        Examples:

        
          gtd build
          gtd build --one            # only the next item
          gtd build --non-interactive --json   # CI: never asks, exit 4 if approval is needed
        """
        run_phase(RunOptions(provider, model, level, non_interactive, quiet, verbose, directory,
                             json_events, build_on_red).merged(typer_ctx.obj), "build", one=one)

    @app.command("learn")
    def learn_cmd(
        typer_ctx: typer.Context,
        provider: opt.Provider = None, model: opt.Model = None, level: opt.LevelOpt = None,
        non_interactive: opt.NonInteractive = False, quiet: opt.Quiet = False, verbose: opt.Verbose = False,
        directory: opt.Directory = None, json_events: opt.JsonEvents = False,
    ) -> None:
        """Run the learn phase: merge the plan's learnings into AGENTS.md, then remove TODO.md.

        Examples:

        
          gtd learn
        """
        run_phase(RunOptions(provider, model, level, non_interactive, quiet, verbose, directory,
                             json_events).merged(typer_ctx.obj), "learn")

    @app.command("status")
    def status_cmd(
        typer_ctx: typer.Context,
        json_out: opt.JsonOut = False,
        directory: opt.Directory = None,
    ) -> None:
        """Say what `gtd` would do next and why (which commit, which file, which rule). Runs nothing.

        Examples:

        \b
          gtd status
          gtd status --json | jq -r .next
        """
        from gtd.cli.status_cmd import run as show_status

        show_status(RunOptions(directory=directory).merged(typer_ctx.obj).directory, json_out)

    app.command("demo")(demo)


DEMO_GOAL = """# Greeting tool

A tiny greeting module with a command line, tested with unittest.
"""


def demo(
    keep: Annotated[Optional[str], typer.Option("--keep", help="Create the demo repository here instead of a temp dir.")] = None,
    quiet: opt.Quiet = False, verbose: opt.Verbose = False,
) -> None:
    """Run the whole workflow offline on a temp repo: scripted agent, real sandbox, real commits.

    Examples:

    
      gtd demo
      gtd demo --keep /tmp/gtd-demo   # keep the repository to look at
    """
    import tempfile
    from pathlib import Path

    from gtd import workspace_files
    from gtd.workflow import git
    from gtd.workflow.engine import run_until_blocked

    repo = Path(keep).resolve() if keep else Path(tempfile.mkdtemp(prefix="gtd-demo-"))
    repo.mkdir(parents=True, exist_ok=True)
    git.git(repo, "init", "-q")
    workspace_files.write_text(repo, "README.md", "# demo\n")
    workspace_files.write_text(repo, ".gitignore", "__pycache__/\n")
    workspace_files.write_text(repo, ".gtdrc.json", json.dumps({"provider": "scripted", "testCommand": "python3 -m unittest -q"},
                                                               indent=2) + "\n")
    git.commit_all(repo, "initial commit")
    workspace_files.write_text(repo, "TODO.md", DEMO_GOAL)
    with workflow(RunOptions(provider="scripted", quiet=quiet, verbose=verbose, directory=repo, demo=True)) as ctx:
        run_until_blocked(ctx, max_steps=10)
        violations = [e for e in ctx.audit.read() if e.get("event") == "violation"]
    stdout.print(f"\n[bold]Demo repository:[/bold] {repo}")
    stdout.print(git.git(repo, "log", "--format=  %h %s"), end="", highlight=False, markup=False)
    if violations:
        stdout.print("[bold]Refused by the sandbox (from the audit log):[/bold]")
        for event in violations:
            stdout.print(f"  {event.get('kind')} {event.get('target')} ({event.get('detail') or event.get('level')})",
                         highlight=False, markup=False)
