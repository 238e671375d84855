"""Turn command-line options into a loaded config and a RunContext for the workflow."""

from __future__ import annotations

import sys
from pathlib import Path

from gtd.errors import NotARepository
from gtd.terminal_text import markup

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Any

    from gtd.cli.run_options import RunOptions
    from gtd.config.loader import LoadedConfig


class LazyConsole:
    """A SafeConsole created on first use: importing rich costs more than `gtd --help` may take."""

    def __init__(self, **settings: Any):
        object.__setattr__(self, "_settings", settings)
        object.__setattr__(self, "_console", None)
        object.__setattr__(self, "_adjusted", False)  # a setting changed on the console: rich prints everything

    def _get(self):
        if self._console is None:
            from gtd.terminal_text import SafeConsole

            object.__setattr__(self, "_console", SafeConsole(**self._settings))
        return self._console

    def real(self):
        """The console itself (rich.Live needs one: special methods are not forwarded)."""
        return self._get()

    def _plain_stream(self):
        """The stream, when rich would style nothing on it and print markup as plain text; else None."""
        from gtd.terminal_text import no_terminal

        if self._adjusted or not set(self._settings) <= {"stderr", "highlight", "soft_wrap"} \
                or not self._settings.get("soft_wrap"):
            return None
        stream = sys.stderr if self._settings.get("stderr") else sys.stdout
        return stream if no_terminal(stream) else None

    @property
    def is_terminal(self) -> bool:
        if self._console is None and self._plain_stream() is not None:
            return False
        return self._get().is_terminal

    def print(self, *objects: Any, **settings: Any) -> None:
        """rich's print. A markup line on a stream rich styles nothing on is written as the plain text
        rich would print (terminal_text.plain_markup), without importing rich (~20 ms of every phase
        run without a terminal: CI, --json, a pipe); anything else goes to rich."""
        if len(objects) == 1 and isinstance(objects[0], str) and set(settings) <= {"highlight"} \
                and not settings.get("highlight", self._settings.get("highlight", True)):
            stream = self._plain_stream()
            if stream is not None:
                from gtd.terminal_text import plain_markup

                text = plain_markup(objects[0])
                if text is not None:
                    stream.write(text + "\n")
                    stream.flush()
                    return
        self._get().print(*objects, **settings)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, "_adjusted", True)
        setattr(self._get(), name, value)


stdout = LazyConsole(soft_wrap=True)
stderr = LazyConsole(stderr=True, highlight=False, soft_wrap=True)


def _trust_filter(path, values, content=None):
    """The project trust filter, imported only when a load is not answered from the config cache."""
    from gtd.escalation.trust import filter_untrusted_project

    return filter_untrusted_project(path, values, content)


def _trust_inputs():
    from gtd.paths import user_state_dir

    return [user_state_dir() / "trust.json"]  # escalation/trust.py TRUST_FILE: what the filter reads


def _trust_ignores_path(values):
    from gtd.escalation.trust import filter_ignores_path

    return filter_ignores_path(values)


_trust_filter.cache_inputs = _trust_inputs
_trust_filter.takes_content = True  # config/loader.py passes the bytes it read: trust is decided on those
_trust_filter.ignores_path = _trust_ignores_path  # config/loader.py: such loads are cached for any project directory


def load(options: RunOptions) -> LoadedConfig:
    """The effective config, with untrusted loosening from the project file dropped (and said so)."""
    return load_at(options.cwd(), options.config_flags())


def load_at(cwd: Path, flags: dict) -> LoadedConfig:
    """`load` for a directory and command-line config layer (no RunOptions: no typer)."""
    from gtd.config.loader import load_config
    from gtd.paths import config_cache_dir

    loaded = load_config(cwd, flags, project_filter=_trust_filter, cache_dir=config_cache_dir())
    for warning in loaded.warnings:
        stderr.print(f"[yellow]warning:[/yellow] {markup(warning)}", highlight=False)
    return loaded


def run_context(options: RunOptions):
    """Everything a phase needs. Imports lazily so `gtd --help` and `gtd config` stay fast."""
    from gtd.audit import AuditLog
    from gtd.escalation.escalator import Escalator, is_interactive
    from gtd.providers.registry import get_provider
    from gtd.workflow.context import RunContext
    from gtd.workflow.git import subject
    from gtd.workflow.progress import Progress

    loaded = load(options)
    if loaded.repo_root is None:
        raise NotARepository(options.cwd())
    if loaded.values.get("provider") == "scripted":  # before anything is recorded or committed
        from gtd.providers.scripted import refuse_builtin_script

        refuse_builtin_script(loaded.values.get("script"), demo=options.demo)
    repo = loaded.repo_root
    from gtd import runlock

    run_lock = runlock.acquire(repo)  # a second run in this repository stops here, before it writes anything
    audit = AuditLog(repo)
    interactive = is_interactive(options.non_interactive)
    escalator = Escalator(repo, interactive=interactive, audit=audit, phase=None, console=stderr)
    progress = Progress(stderr, options.verbosity, events=sys.stdout if options.json else None,
                        describe_commit=lambda sha: subject(repo, sha))
    audit.listeners.append(progress.audited)
    escalator.screen = progress  # the live view steps aside while a question is on screen
    if options.level is not None:
        audit.record("level_override", level=options.level.value, source="command line")
    audit.record("run", command=" ".join(sys.argv[1:]), provider=loaded.values["provider"], interactive=interactive)
    if run_lock.taken_over:
        progress.warn(f"a gtd run that ended without releasing this repository ({runlock.describe(run_lock.taken_over)}) "
                      "was killed: its lock is taken over")
    ctx = RunContext(repo=repo, loaded=loaded, provider_factory=lambda config: get_provider(config.provider, config),
                     escalator=escalator, audit=audit,
                     progress=progress, reload_config=lambda: load(options),
                     level_override=options.level, run_lock=run_lock)
    if ctx.config.sandbox.escalation_policy == "auto":  # `prompt` never builds a reviewer: no model is asked
        from gtd.escalation.reviewer import Reviewer

        escalator.reviewer = Reviewer(lambda: ctx.config, lambda: ctx.provider, repo)
    return ctx
