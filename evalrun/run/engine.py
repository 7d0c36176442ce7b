"""Run a plan's cells: each a `Trial` in a fresh sandbox, bounded concurrency, one record per cell.

One sample's life is `evalrun.run.trial.Trial` (setup, agent, collect, verify, record). Here:
a trial that ended in a harness `error` is tried again with backoff (`run_sample`), cells run at
most `concurrency` at a time (`execute`), and a stop signal cancels the samples in flight.
Nothing one sample does can abort the run.
"""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from evalrun.agents.base import Agent
from evalrun.errors import ExitCode
from evalrun.models.records import Outcome, SampleRecord, writable
from evalrun.retry import async_retrying
from evalrun.run.final_workspace import WorkspaceKeeper
from evalrun.run.trial import Limits, LogSink, Trial
from evalrun.sandbox.base import SandboxBackend
from evalrun.tasks.loader import Task

if TYPE_CHECKING:
    from evalrun.run.judges import Judge


async def run_sample(
    task: Task,
    trial: int,
    agent: Agent,
    backend: SandboxBackend,
    limits: Limits,
    run_id: str,
    log: LogSink | None = None,
    stop_reason: Callable[[], str | None] | None = None,
    keeper: WorkspaceKeeper | None = None,
) -> SampleRecord:
    """One `Trial` of the cell, tried again on a harness error up to `limits.max_retries` times
    with backoff (not once `stop_reason()` says the run must stop); `keeper` keeps its final
    workspace."""

    async def attempt() -> SampleRecord:  # a fresh trial each time
        return await Trial(task, trial, agent, limits, run_id, log, keeper).run(backend)

    return await retried(attempt, limits, stop_reason)


async def retried(
    attempt: Callable[[], Awaitable[SampleRecord]],
    limits: Limits,
    stop_reason: Callable[[], str | None] | None = None,
) -> SampleRecord:
    """`attempt()`'s record, tried again while it is an `error`, as `run_sample` says."""
    retryer = async_retrying(
        1 + limits.max_retries,
        limits.retry_backoff_s,
        on_result=lambda rec: rec.outcome is Outcome.error,
        give_up=lambda: stop_reason is not None and stop_reason() is not None,  # e.g. budget
    )
    rec: SampleRecord = await retryer(attempt)
    return rec.model_copy(update={"attempts": retryer.statistics["attempt_number"]})


Cell = tuple[Task, int]
OnRecord = Callable[[SampleRecord], None]
Attempt = Callable[[Task, int, "LogSink | None"], Awaitable[SampleRecord]]
"""One attempt at a cell (task, trial), its logs to the sink: a regrade's, in place of a
`Trial` of the batch's agent (`evalrun.run.regrade`)."""


@dataclass(frozen=True)
class Batch:
    """What every sample of one `execute` runs with (`RunPlan.batch` for a run's): the agent,
    the backend its sandboxes come from, the limits, the run's id, how many samples at a time,
    the judge that scores each record after grading (None: no judge), what keeps each sample's
    final workspace (None: nothing), and `attempt`, which replaces the agent's `Trial` (a
    regrade's attempts)."""

    agent: Agent
    backend: SandboxBackend
    limits: Limits
    run_id: str
    concurrency: int
    judge: Judge | None = None
    keeper: WorkspaceKeeper | None = None
    attempt: Attempt | None = None


async def execute(
    cells: list[Cell],
    batch: Batch,
    *,
    on_record: OnRecord,
    log: LogSink | None = None,
    on_interrupt: Callable[[signal.Signals], None] | None = None,
    stop_reason: Callable[[], str | None] | None = None,
) -> signal.Signals | None:
    """Run every cell, at most `batch.concurrency` at a time, calling `on_record` as each finishes.

    The first stop signal (Ctrl-C's SIGINT, SIGTERM, SIGHUP: `STOP_SIGNALS`) stops starting
    samples and cancels the ones in flight (their sandboxes and process trees are cleaned up; they
    get no record, so a resume runs them again), then calls `on_interrupt` with it; a second one
    exits the process at once (`exit_now`). Returns the signal that stopped the run, else None.
    `stop_reason()` (the agent's run budget) is asked before each sample starts: once it says why,
    no further sample starts and those cells get no record (a resume runs them).
    """
    agent, backend, limits = batch.agent, batch.backend, batch.limits
    run_id, judge = batch.run_id, batch.judge
    gate = asyncio.Semaphore(max(1, batch.concurrency))

    async def one(task: Task, trial: int) -> None:
        async with gate:
            if stop_reason is not None and stop_reason():
                return
            try:
                if batch.attempt is not None:
                    rec = await retried(partial(batch.attempt, task, trial, log), limits)
                else:
                    rec = await run_sample(
                        task, trial, agent, backend, limits, run_id, log, stop_reason, batch.keeper
                    )
            except Exception as exc:  # a bug in evalrun itself: keep the run going, say so
                now = time.time()
                rec = SampleRecord(
                    run_id=run_id,
                    task_id=task.id,
                    fingerprint=task.fingerprint,
                    trial=trial,
                    outcome=Outcome.error,
                    reason=f"internal error: {type(exc).__name__}: {exc}",
                    started_at=now,
                    finished_at=now,
                )
            if judge is not None:  # after grading, on the final attempt; never changes outcome
                rec = await judge.judge(task, rec)
        on_record(writable(rec))  # whatever the agent put in it (evalrun.models.writable)

    jobs = [asyncio.create_task(one(task, trial)) for task, trial in cells]
    results, stopped = await until_stopped(jobs, backend, on_interrupt)
    for result in results:  # e.g. the store could not write: stop loudly, never drop records
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise result
    return stopped


STOP_SIGNALS = {
    signal.SIGINT: ExitCode.INTERRUPTED,
    signal.SIGTERM: ExitCode.TERMINATED,
    signal.SIGHUP: ExitCode.HUNG_UP,
}
"""The signals that end a run the way Ctrl-C does, and the status each exits with (128 + n)."""


def stopped_by(signum: int) -> str:
    """How a stop is said: 'interrupted' for Ctrl-C, 'stopped by SIGTERM' for the others."""
    return "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"


async def until_stopped(
    jobs: list[asyncio.Task[Any]],
    backend: SandboxBackend,
    on_stop: Callable[[signal.Signals], None] | None = None,
) -> tuple[list[Any], signal.Signals | None]:
    """Await every job (results or exceptions, in order) and return them with the stop signal
    that cancelled them, if one came: the first of `STOP_SIGNALS` cancels every job (each cleans
    up its own sandboxes) and then calls `on_stop`; a second one exits at once (`exit_now`). A
    signal the process ignores (`nohup`) stays ignored; off the main thread nothing is handled."""
    stopped: signal.Signals | None = None

    def stop(signum: signal.Signals) -> None:
        nonlocal stopped
        if stopped is not None:  # every finished record is already on disk
            word = stopped_by(signum)
            exit_now(backend, f"{word} again: ending open sandboxes and exiting now", signum)
        stopped = signum
        for job in jobs:
            job.cancel()
        if signum == signal.SIGHUP:
            drop_hung_up_terminal()
        if on_stop:
            on_stop(signum)

    loop = asyncio.get_running_loop()
    handled: dict[signal.Signals, Any] = {}
    for signum in STOP_SIGNALS:
        previous = signal.getsignal(signum)
        if previous == signal.SIG_IGN:
            continue
        try:
            loop.add_signal_handler(signum, stop, signum)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            break
        handled[signum] = previous
    try:
        return await asyncio.gather(*jobs, return_exceptions=True), stopped
    finally:
        for signum, previous in handled.items():
            loop.remove_signal_handler(signum)  # (which installs Python's default)
            if previous is not None:
                signal.signal(signum, previous)


T = TypeVar("T")


async def cancelled_on_stop(work: Coroutine[Any, Any, T], backend: SandboxBackend, what: str) -> T:
    """Await `work` (`what`: a command's samples, `evalrun check`'s) under `until_stopped`: a first
    stop signal cancels it, says so on stderr, lets its sandboxes close and exits with that
    signal's status (`SystemExit`: no traceback, `finally` blocks run); a second exits at once."""

    def say(signum: signal.Signals) -> None:
        say_now(f"{stopped_by(signum)}: cancelling {what} (a second signal exits at once)")

    (result,), stopped = await until_stopped([asyncio.create_task(work)], backend, say)
    if stopped is not None:
        raise SystemExit(STOP_SIGNALS[stopped])
    if isinstance(result, BaseException):
        raise result
    return result


def exit_now(backend: SandboxBackend, message: str, signum: int = signal.SIGINT) -> NoReturn:
    """Leave the process at once, without a traceback: end the backend's open sandboxes
    (`abandon`: quick, or left marked for the next preflight) and exit with the status of the
    stop signal `signum` (`STOP_SIGNALS`: 130 for Ctrl-C)."""
    say_now(message)
    with suppress(Exception):
        backend.abandon()
    os._exit(STOP_SIGNALS[signal.Signals(signum)])


def drop_hung_up_terminal() -> None:
    """After SIGHUP a terminal on stdout or stderr is as good as gone (the session hung up: every
    write fails), so point those at /dev/null: the summary and reports are still written, the
    rest of the run does not fail on its first line of output. A pipe or a file is kept. (A
    hung-up terminal fails `isatty`; it is still a character device.)"""
    with suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            if stat.S_ISCHR(os.fstat(fd).st_mode):
                os.dup2(devnull, fd)
        os.close(devnull)


def say_now(message: str) -> None:
    """A line on stderr, written at once; never raises (the terminal may be gone: SIGHUP)."""
    with suppress(OSError):
        os.write(2, f"\n{message}\n".encode())
