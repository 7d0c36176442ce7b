"""`run(cfg)`: the whole of `evalrun` as a plain function - plan, execute, summarise, report, gate.

The CLI is a thin shell around this; tests and other programs can call it directly.
"""

from __future__ import annotations

import asyncio
import shlex
import signal
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig
from rich.console import Console

from evalrun.agents.base import RunScope
from evalrun.analysis.configdiff import NOT_RESULT_RELEVANT, diff
from evalrun.analysis.gate import print_verdict
from evalrun.config.schema import SuiteKind
from evalrun.console import make_console, styled
from evalrun.errors import ExitCode, UsageError
from evalrun.models.records import CellKey, SampleRecord
from evalrun.run.engine import STOP_SIGNALS, Cell, execute, exit_now, stopped_by
from evalrun.run.plan import (
    RunPlan,
    build,
    say_skipped,
    with_run_dir,
    without_unhostable,
)
from evalrun.rundir.redact import MIN_SCRUB_CHARS
from evalrun.rundir.store import RunLock, RunStore, claim_new_run_dir, remove_if_unused
from evalrun.rundir.trajectory import Session
from evalrun.sandbox.base import SandboxBackend

if TYPE_CHECKING:
    from evalrun.models.summary import Summary


def print_plan(plan: RunPlan, console: Console) -> None:
    console.print(f"run id     {plan.run_id}")
    console.print(f"run dir    {plan.run_dir}")
    console.print(f"tasks dir  {plan.tasks_dir}")
    if plan.tasks_source is not None:
        console.print(f"suite      {plan.tasks_source.describe()}", highlight=False)
    console.print(f"sandbox    {plan.backend.name}    agent {plan.agent.name}")
    console.print(
        f"tasks      {len(plan.tasks)}    trials {plan.trials}    cells {len(plan.cells)}",
        highlight=False,
    )
    for task in plan.tasks:
        tags = ",".join(task.spec.tags)
        console.print(
            f"  {task.id:<40} {task.spec.difficulty.value:<7} {task.fingerprint[:12]}  [{tags}]",
            highlight=False,
        )
    console.print(f"precision  {expected_precision(plan)}", highlight=False)


def expected_precision(plan: RunPlan) -> str:
    """How wide pass@1's 95% interval will be, from the baseline's variance when there is one."""
    from evalrun.analysis.power import describe, precision_note, variance_for

    base = plan.profile.baseline
    variance = variance_for(base.summary if base else None, None, None)
    note = precision_note(variance, len(plan.tasks), plan.trials)
    source = f"from baseline {base.run_dir}" if base else "no baseline"
    return f"{note}; {describe(variance)}, {source} (more: evalrun power)"


def refuse_incompatible_resume(plan: RunPlan) -> None:
    """A run directory that already holds a run may only be continued with the same
    result-relevant config (agent, provider, model, sandbox, trials, task selection...)."""
    from evalrun.rundir.log import RunLog, is_run_dir

    if not is_run_dir(plan.run_dir):
        return
    recorded = RunLog.open(plan.run_dir)
    lines = diff(recorded.config, plan.config, ignore=NOT_RESULT_RELEVANT).lines()
    # the same tasks_dir reference may resolve to another commit (a branch that moved)
    before, now = (s.facts() if s else {} for s in (recorded.plan.tasks_source, plan.tasks_source))
    lines += [
        f"  {key}: {before.get(key)!r} -> {now.get(key)!r}"
        for key in sorted(set(before) | set(now))
        if before.get(key) != now.get(key)
    ]
    if lines:
        raise UsageError(
            f"{plan.run_dir} holds a run with a different result-relevant config; refusing to "
            "mix results. Differences (recorded -> now):\n" + "\n".join(lines)
        )


def resume_command(run_dir: Path) -> str:
    return f"evalrun resume={shlex.quote(str(run_dir))}"


def run(cfg: DictConfig, console: Console | None = None, overrides: list[str] | None = None) -> int:
    """Run the composed config; return its `ExitCode`: OK; FAILED when the gate breaks;
    TOO_MANY_ERRORS when more samples than `max_errors` ended in a harness error; UNLOADABLE
    when the run finished but task folders of the suite could not be loaded (they were skipped);
    BUDGET when the run reached `budget.run_usd` and started no further sample; INTERRUPTED,
    TERMINATED or HUNG_UP when stopped by Ctrl-C, SIGTERM or SIGHUP (`STOP_SIGNALS`; the run is
    partial). `overrides` are the command-line overrides, kept (redacted) so a resume can replay
    them. The run directory is locked for the whole run: a second writer is refused.

    Outside the samples' execution (preflight, reports) a stop signal (Ctrl-C, SIGTERM, SIGHUP)
    exits at once, quietly; during it the first one cancels the samples in flight and the second
    exits at once (`execute`)."""
    console = console or make_console(wide=True)
    plan = build(cfg)
    if plan.dry_run:
        print_plan(plan, console)
        say_skipped(plan.skipped, console)
        console.print("dry run: nothing was run")
        return ExitCode.UNLOADABLE if plan.unloadable else ExitCode.OK
    claimed = plan.new_dir  # a template run_dir outside Hydra (which claims its own)
    if claimed:
        plan = with_run_dir(plan, claim_new_run_dir(plan.run_dir))
    existed = plan.run_dir.exists() and not claimed
    try:
        with exiting_on_stop_signals(plan.backend), RunLock(plan.run_dir, "run"):
            return _run_plan(plan, console, overrides)
    finally:
        if not existed:
            remove_if_unused(plan.run_dir)  # refused before it wrote anything


@contextmanager
def exiting_on_stop_signals(backend: SandboxBackend) -> Iterator[None]:
    """Within it, Ctrl-C, SIGTERM and SIGHUP leave at once (no traceback, the signal's exit
    status); the handlers this replaced are put back on the way out (none off the main thread;
    an ignored signal, as under `nohup`, stays ignored)."""

    def handler(signum: int, frame: object) -> None:
        word = stopped_by(signum)
        exit_now(backend, f"{word}: exiting now (finished samples are on disk)", signum)

    replaced: dict[signal.Signals, Any] = {}
    for signum in STOP_SIGNALS:
        previous = signal.getsignal(signum)
        if previous in (signal.SIG_IGN, None):  # ignored, or a handler Python cannot put back
            continue
        try:
            signal.signal(signum, handler)
        except ValueError:  # not the main thread
            break
        replaced[signum] = previous
    try:
        yield
    finally:
        for signum, previous in replaced.items():
            signal.signal(signum, previous)


def warn_unscrubbed(plan: RunPlan, console: Console) -> None:
    for name in plan.secrets.unscrubbed:
        console.print(
            styled("[yellow]warning:[/]"),
            f"the value of {name} is shorter than {MIN_SCRUB_CHARS} characters: it is masked "
            "in config.yaml and overrides.yaml but not scrubbed from agent output and logs",
        )


def _run_plan(plan: RunPlan, console: Console, overrides: list[str] | None) -> int:
    # what a run needs beyond a dry run, imported when one starts (bench/startup.py)
    from evalrun.report.files import write_reports
    from evalrun.report.terminal import render
    from evalrun.rundir.log import RunLog

    plan.backend.preflight()
    plan.agent.preflight()
    plan.judge.preflight()
    refuse_incompatible_resume(plan)
    warn_unscrubbed(plan, console)
    with plan.agent.prepared(plan.backend) as scope:  # installs, the model gateway: run-long
        plan = without_unhostable(plan, scope)
        store = RunStore(plan.run_dir, plan.secrets)
        store.begin(plan.config, overrides, plan.to_plan_file())
        log = RunLog.open(plan.run_dir)
        done = set(log.recorded_cells()) & plan.cell_keys()
        todo = [(t, i) for t, i in plan.cells if CellKey.of(t, i) not in done]
        if done:
            console.print(
                f"resuming {plan.run_dir}: {len(done)} samples already recorded, {len(todo)} to run"
            )
        plan.tracker.start(plan)
        signum = _run_samples(plan, todo, store, scope, console)

        summary = log.summarize()
        store.write_summary(summary)
        report_files = write_reports(plan.run_dir)  # report.html, junit.xml
        plan.tracker.finish(summary)
        records = log.planned(log.records())  # in plan order, for the reasons and the probes
        render(summary, plan.run_dir, console, records, plan.tasks_source)
        if plan.suite is SuiteKind.probes:  # each expectation's pass rate per probe, probes.json
            from evalrun.report.probes import report_expectations

            report_expectations(plan.run_dir, records, console)
        console.print(f"report: {report_files[0]}", soft_wrap=True)
        say_skipped(plan.skipped, console)
        return _exit_code(plan, summary, signum, scope.stop_reason(), console)


def _run_samples(
    plan: RunPlan, todo: list[Cell], store: RunStore, scope: RunScope, console: Console
) -> signal.Signals | None:
    """Run the plan's cells still to do, each record stored, tracked and shown as it comes
    (`execute`); return the stop signal that ended it early, if one did."""
    from evalrun.run.progress import RunProgress

    def on_interrupt(signum: signal.Signals) -> None:
        again = "Ctrl-C again to exit" if signum == signal.SIGINT else "a second signal exits"
        console.print(
            styled("[yellow]{}:[/]", stopped_by(signum)),
            f"cancelling samples in flight ({again} at once)",
        )

    session = Session.of(plan.to_plan_file(), plan.config)
    with RunProgress(len(todo), dict(Counter(t.id for t, _ in todo)), console) as progress:

        def on_record(record: SampleRecord) -> None:
            written = store.append(record)  # scrubbed of the run's secret values
            store.write_trajectory(written, session)  # trajectory.json (ATIF)
            plan.tracker.record(written)
            progress.advance(written)

        cells = execute(
            todo,
            plan.batch,
            on_record=on_record,
            log=store.write_log,
            on_interrupt=on_interrupt,
            stop_reason=scope.stop_reason,
        )
        try:
            return asyncio.run(cells)
        finally:
            store.close()


def _exit_code(
    plan: RunPlan,
    summary: Summary,
    signum: signal.Signals | None,
    budget_stop: str | None,
    console: Console,
) -> int:
    """Say why a run is partial or not a result, and return its `ExitCode`: the budget's stop
    (unless a stop signal left cells unrun), a stop signal's, too many harness errors, else the
    gate's verdict."""
    state = summary.state
    incomplete = state is not None and not state.complete
    if budget_stop and not (signum and incomplete):  # partial because its budget ran out
        console.print(
            styled("[yellow]run stopped: {}.[/]", budget_stop),
            f"{summary.samples} of {len(plan.cells)} samples ran; raise budget.run_usd and "
            f"resume: {resume_command(plan.run_dir)}",
            soft_wrap=True,
        )
        return ExitCode.BUDGET
    if state is not None and incomplete:
        console.print(
            styled(
                "[yellow]{}the run is {}.[/]",
                f"{stopped_by(signum)}: " if signum else "",
                state.describe(),
            ),
            f"Resume with: {resume_command(plan.run_dir)}",
            soft_wrap=True,
        )
        return STOP_SIGNALS[signum or signal.SIGINT]  # (no signal: as Ctrl-C's)
    verdict = print_verdict(plan.profile, summary, console)
    if summary.errors > plan.max_errors:
        console.print(
            styled(
                "[red]{} of {} samples ended in a harness error, more than max_errors={}:[/] "
                "their cells are missing from every rate, so this run is not a result; fix the "
                "cause and run again",
                summary.errors,
                summary.samples,
                plan.max_errors,
            )
        )
        return ExitCode.TOO_MANY_ERRORS
    return verdict or (ExitCode.UNLOADABLE if plan.unloadable else ExitCode.OK)
