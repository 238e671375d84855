"""The build phase: hand the agent the next unchecked item(s), run the tests, re-prompt on
failure, then gtd itself ticks the items and commits. Bounded by a hard cap on steps.

Before the first build step of a plan the tests run once on their own (the baseline): when they
are red already, the person hears it before any agent run is spent. A step in which the agent
changed nothing is asked again once, then stops: an item is never ticked for work not done.
"""

from __future__ import annotations

from gtd.config.levels import Phase
from gtd.errors import GtdError
from gtd.exitcodes import ExitCode
from gtd.prompts import render
from gtd.terminal_text import markup
from gtd.workflow import git, green, leftovers, testcmd
from gtd.workflow.context import RunContext
from gtd.workflow.markdown import normalize_todo
from gtd.workflow.phase_agent import PhaseAgent
from gtd.workflow.plan import AGENTS_FILE, read_text
from gtd.workflow.steps import Step, built_since_plan, commit_human_edits, message
from gtd.workflow.todo import TODO_FILE, Item, read_todo, write_todo

MAX_TEST_OUTPUT_CHARS = 8000
NO_CHANGE_RETRIES = 1


def _describe_item(item: Item) -> str:
    text = f"- ({item.package}) {item.text}" if item.package else f"- {item.text}"
    return text + "".join(f"\n  - {detail}" for detail in item.details)


def _work_changed(ctx: RunContext) -> bool:
    """Anything to commit besides TODO.md (which only gtd ticks) and what an earlier step left out."""
    from gtd.workflow.unsafe import left_out_earlier

    kept_out = left_out_earlier(ctx.repo)
    return any(change.path != TODO_FILE and not (change.status == "??" and change.path in kept_out)
               for change in git.changes(ctx.repo))


def check_tests(ctx: RunContext, agent: PhaseAgent, tests: testcmd.TestCommand, why: str) -> None:
    """Run the test command on its own (no agent). Red stops with exit 1 and the failures."""
    ctx.progress.info(f"running tests ({markup(why)}): [bold]{markup(tests.command or '')}[/bold]")
    run = agent.run_tests(tests.command or "")
    ctx.audit.record("test_check", why=why, passed=run.passed)
    if run.passed:
        green.record(ctx.repo, tests.command or "")
        ctx.progress.info("[green]✓ tests pass[/green]")
        return
    raise GtdError(f"tests fail {why}: `{tests.command}` exited with {run.exit_code}.\n" + run.output[-3000:])


def _baseline(ctx: RunContext, agent: PhaseAgent, tests: testcmd.TestCommand) -> bool:
    """Before the plan's first build step: are the tests green before the agent touches anything?
    Returns False when they are red and the person (or `baselineTests`) chose to build anyway. Skipped
    when a green full run of the same command already tested exactly this code (gtd.workflow.green)."""
    if green.last_green(ctx.repo, tests.command or "") is not None:
        ctx.progress.info("baseline: skipped: the last green full test run tested exactly this code (only gtd's "
                          "own TODO.md/AGENTS.md changed since)")
        ctx.audit.record("baseline_skipped", why="same code as the last green full test run")
        return True
    ctx.progress.info(f"baseline: running the tests before the first build step: [bold]{markup(tests.command or '')}[/bold]")
    run = agent.run_tests(tests.command or "")
    ctx.audit.record("baseline_tests", passed=run.passed, exit_code=run.exit_code)
    if run.passed:
        green.record(ctx.repo, tests.command or "")
        ctx.progress.info("[green]✓ baseline tests pass[/green]")
        return True
    ctx.progress.warn(f"baseline tests FAIL before any build step (`{tests.command}` exited with {run.exit_code}):\n"
                      + run.output[-2000:])
    policy = ctx.config.baseline_tests
    if policy == "ask" and ctx.escalator.interactive:
        with ctx.progress.paused():
            answer = ctx.progress.console.input("The tests are red before the agent starts. Build anyway? \\[y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            raise GtdError("stopped before the first build step: the tests are already red. Fix them (your fix is "
                           "committed and checked on the next run), then run gtd again.")
    elif policy == "stop":
        raise GtdError("baseline tests fail before the first build step, so no agent run was spent (baselineTests: "
                       "stop). Fix them (your fix is committed and checked on the next run), or run with "
                       "--build-on-red (or set baselineTests to `build`) to build on red tests.")
    elif policy == "ask":  # headless: nobody to ask, so stop as the original gtd did
        raise GtdError("baseline tests fail before the first build step, so no agent run was spent (no terminal to "
                       "ask). Fix them (your fix is committed and checked on the next run), or run with --build-on-red "
                       "(or set baselineTests to `build`) to build on red tests.")
    else:
        ctx.progress.warn("building anyway on red tests (baselineTests: build / --build-on-red)")
    ctx.audit.record("baseline_red_accepted")
    return False


def _carried_work(ctx: RunContext) -> leftovers.AgentWork | None:
    """A stopped build step's unfinished work, which this step carries on (its session resumed)."""
    carried = leftovers.pending(ctx.repo)
    if carried is None or carried.phase != Phase.BUILD.value:
        return None
    resumed = carried.session and carried.provider == ctx.provider.name
    ctx.progress.info(f"carrying on with the agent's unfinished work ({markup(', '.join(carried.all_paths[:5]))}"
                      f"{' …' if len(carried.all_paths) > 5 else ''}; stopped: {markup(carried.reason or 'unknown')})"
                      + (f", resuming its {markup(carried.provider)} session" if resumed else ", in a fresh session"))
    return carried


def _carry_on(ctx: RunContext, agent: PhaseAgent, carried: leftovers.AgentWork, items: list[Item],
              tests: testcmd.TestCommand, full_prompt: str) -> str:
    """The prompt for carrying a stopped step on: a resumed session knows the task and hears only where it
    stands; a fresh one (the session could not be resumed) is told that and given the whole task."""
    values = dict(items="\n".join(_describe_item(i) for i in items), why=carried.reason or "unknown",
                  paths=", ".join(carried.all_paths), test_command=tests.command or "(none configured)",
                  edited=(f"The person edited {', '.join(carried.edited)} since: keep their edits.\n"
                          if carried.edited else ""))
    agent.fresh_prompt = render("build_carry_on", **values, context="\n" + full_prompt)
    resumed = carried.session and carried.provider == ctx.provider.name
    return render("build_carry_on", **values, context="") if resumed else agent.fresh_prompt


def build_step(ctx: RunContext) -> str | None:
    """Build the next package of unchecked items. Returns the commit sha, or None if nothing is left."""
    commit_human_edits(ctx.repo, ctx.progress)
    todo = read_todo(ctx.repo)
    if todo is None:
        raise GtdError(f"no {TODO_FILE} to build from: write one, or run `gtd plan \"<goal>\"` first",
                       exit_code=ExitCode.USAGE)
    errors = todo.build_errors()
    if errors:
        raise GtdError(f"{TODO_FILE} is not a plan gtd can build: {'; '.join(errors)}. Fix it by hand, or run "
                       "`gtd plan` to have the agent fix it.")
    items = todo.next_package() or todo.unchecked()[: ctx.config.items_per_step]
    if not items:
        return None
    titles = "; ".join(item.text for item in items)
    package = items[0].package
    label = f"{package}: {titles}" if package else titles
    tests = testcmd.resolve(ctx.config.test_command, ctx.repo)
    ctx.progress.phase("build", item=label, level=ctx.level_for(Phase.BUILD).value, provider=ctx.provider.name)
    if tests.command is None:
        ctx.progress.warn("NO TEST COMMAND: none is configured (`testCommand`) and none was detected, so this "
                          "step is not tested. Set `testCommand` in .gtdrc.json (`gtd init` proposes one).")
    else:
        ctx.progress.info(markup(tests.describe()))
    agent = PhaseAgent(ctx, Phase.BUILD)
    carried = _carried_work(ctx)
    baseline_red = False
    if tests.command and ctx.config.baseline_tests != "off" and not built_since_plan(ctx.repo) \
            and not git.changes(ctx.repo):  # (not when carrying on with a stopped step's work)
        baseline_red = not _baseline(ctx, agent, tests)
    prompt = render("build", items="\n".join(_describe_item(i) for i in items),
                    test_command=tests.command or "(none configured)", todo=read_text(ctx, TODO_FILE),
                    agents=read_text(ctx, AGENTS_FILE))
    if carried is not None:
        prompt = _carry_on(ctx, agent, carried, items, tests, prompt)
    system = render("system_build")
    attempts = ctx.config.test_retries + 1
    attempt, unchanged_left = 1, NO_CHANGE_RETRIES
    while True:
        agent.ask(prompt, system_prompt=system, editable_paths=None)
        if not _work_changed(ctx):
            ctx.audit.record("build_unchanged", items=[i.text for i in items], retry=unchanged_left > 0)
            if unchanged_left:
                unchanged_left -= 1
                ctx.progress.warn("the agent changed nothing: asking it again to do the item(s)")
                prompt = render("build_unchanged", items="\n".join(_describe_item(i) for i in items))
                continue
            raise GtdError(f"the agent changed nothing for: {label}. The item(s) stay unticked and no build step "
                           f"was committed. Do them yourself (gtd commits your fix), or reword them in {TODO_FILE}.")
        if not tests.command:
            break
        ctx.progress.info(f"running tests: [bold]{markup(tests.command)}[/bold]")
        run = agent.run_tests(tests.command)
        if run.passed:
            green.record(ctx.repo, tests.command)
            ctx.progress.info("[green]✓ tests pass[/green]")
            break
        ctx.progress.warn(f"tests failed (attempt {attempt} of {attempts})")
        if attempt == attempts:
            raise GtdError(f"tests still fail after {attempts} attempt(s) on: {label}. The agent's changes are left "
                           "uncommitted for you to inspect: the next run carries them on (edit them if you like: your "
                           "edits stay in and the step's commit names them).\n" + run.output[-2000:])
        prompt = render("build_retry", test_command=tests.command, attempt=attempt, attempts=attempts,
                        test_output=run.output[-MAX_TEST_OUTPUT_CHARS:])
        attempt += 1
    current = read_todo(ctx.repo) or todo
    wanted = {x.text for x in items}
    write_todo(ctx.repo, current.ticked([i for i in current.items if i.text in wanted and not i.done]))
    normalize_todo(ctx.repo)
    agent.record_work()  # gtd's tick is part of the step: a crash before the commit never makes it the person's
    body = [f"Tested with: {tests.command} ({'configured' if tests.source == 'config' else tests.source})"
            if tests.command else testcmd.NOT_TESTED_NOTE]
    if baseline_red:
        body.append("Baseline: the tests were already red before this plan's first build step.")
    if carried is not None and carried.edited:
        body.append("Also holds the person's edits to " + ", ".join(carried.edited) + ", made in the agent's unfinished "
                    "work while the step was stopped.")
    from gtd.workflow import unsafe as unsafe_files

    untracked = [c.path for c in git.changes(ctx.repo) if c.status == "??"]
    unsafe = unsafe_files.find_unsafe(untracked, git.tracked_dirs(ctx.repo))
    left_out = None
    if unsafe:
        left_out = unsafe_files.describe(unsafe)
        ctx.progress.warn(f"left out of the build commit (secrets or generated bulk), still uncommitted and shown by "
                          f"`git status`: {left_out}. `git add` what belongs in the repository, .gitignore the rest")
        body.append(f"Left out (uncommitted): {left_out}")
    sha = git.commit_all(ctx.repo, message(Step.BUILD, label) + "\n\n" + "\n".join(body),
                         leave_out=[e.path for e in unsafe])
    unsafe_files.remember_left_out(ctx.repo, unsafe_files.files_of(unsafe, untracked))
    ctx.audit.record("step", step="build", items=[i.text for i in items], commit=sha, left_out=left_out)
    leftovers.forget(ctx.repo)  # the agent's work is committed: nothing of it is unfinished any more
    if sha:
        ctx.progress.committed(git.subject(ctx.repo, sha), sha, git.commit_files(ctx.repo, sha))
    ctx.progress.info(f"[green]✓ build[/green] {markup(label)}")
    return sha


def build(ctx: RunContext) -> int:
    """Build until no unchecked items are left, capped by `maxBuildSteps`. Returns steps done."""
    done = 0
    while done < ctx.config.max_build_steps:
        if build_step(ctx) is None:
            return done
        done += 1
    todo = read_todo(ctx.repo)
    if todo and todo.unchecked():
        ctx.progress.warn(f"stopped after maxBuildSteps={ctx.config.max_build_steps} build steps; run `gtd build` to go on")
    return done
