"""Turn command-line options into a loaded config and a RunContext for the workflow."""

from __future__ import annotations

import sys


from gtd.cli.options import RunOptions
from gtd.config.loader import LoadedConfig, load_config
from gtd.errors import GtdError
from gtd.terminal_text import SafeConsole, markup
from gtd.exitcodes import ExitCode

stdout = SafeConsole(soft_wrap=True)
stderr = SafeConsole(stderr=True, highlight=False, soft_wrap=True)


def load(options: RunOptions) -> LoadedConfig:
    """The effective config, with untrusted loosening from the project file dropped (and said so)."""
    from gtd.escalation.trust import filter_untrusted_project

    loaded = load_config(options.cwd(), options.config_flags(), project_filter=filter_untrusted_project)
    for warning in loaded.warnings:
        stderr.print(f"[yellow]warning:[/yellow] {markup(warning)}", highlight=False)
    return loaded


def run_context(options: RunOptions):
    """Everything a phase needs. Imports lazily so `gtd --help` and `gtd config` stay fast."""
    from gtd.audit import AuditLog
    from gtd.escalation.escalator import Escalator, is_interactive
    from gtd.providers.registry import get_provider
    from gtd.workflow.context import RunContext
    from gtd.workflow.progress import Progress

    loaded = load(options)
    if loaded.repo_root is None:
        raise GtdError(f"{options.cwd()} is not inside a git repository: run `git init` first", exit_code=ExitCode.USAGE)
    repo = loaded.repo_root
    audit = AuditLog(repo)
    interactive = is_interactive(options.non_interactive)
    escalator = Escalator(repo, interactive=interactive, audit=audit, phase=None, console=stderr)
    if options.level is not None:
        audit.record("level_override", level=options.level.value, source="command line")
    audit.record("run", command=" ".join(sys.argv[1:]), provider=loaded.config.provider, interactive=interactive)
    return RunContext(repo=repo, loaded=loaded, provider_factory=lambda config: get_provider(config.provider, config),
                      escalator=escalator, audit=audit,
                      progress=Progress(stderr, options.verbosity), reload_config=lambda: load(options),
                      level_override=options.level)
