"""Run a plan's cells: each in a fresh sandbox, bounded concurrency, one record per cell.

A sample's life: open a sandbox (as the task's format asks: `SandboxSpec`) -> the format
prepares the workspace -> agent.run -> grade (the format's hidden verifier) -> close; a
multi-step task takes one agent turn and one grading per step in the same sandbox (`turns`).
Nothing one sample does can abort the run: an agent crash or timeout is recorded and the sample
is still graded; a harness failure is an `error` outcome, retried with backoff, then recorded.
"""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import time
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from evalrun.agents.base import Agent
from evalrun.config.schema import EvalConfig, TimeoutsConf
from evalrun.errors import ExitCode, HarnessError, SandboxError
from evalrun.models.records import AgentResult, CellKey, Outcome, Phases, SampleRecord, writable
from evalrun.models.writable import tail_text
from evalrun.retry import async_retrying
from evalrun.run.turns import take_steps, take_turn
from evalrun.sandbox.base import Sandbox, SandboxBackend
from evalrun.tasks.base import SetupFailed
from evalrun.tasks.loader import Task

if TYPE_CHECKING:
    from evalrun.run.judges import Judge

AGENT_OUTPUT_CHARS = 20_000


@dataclass(frozen=True)
class Limits:
    """Per-phase timeouts, the retry policy for harness errors, and whether each sample records
    its workspace diff."""

    # defaults: the config's (`timeouts`, `max_retries`, `retry_backoff_s`), their one home
    setup_s: float = TimeoutsConf.setup_s
    agent_s: float = TimeoutsConf.agent_s
    verify_s: float = TimeoutsConf.verify_s
    max_retries: int = EvalConfig.max_retries
    retry_backoff_s: float = EvalConfig.retry_backoff_s  # doubled after each retry
    workspace_diff: bool = True  # record what the agent changed (`evalrun check` needs not)


LogSink = Callable[[CellKey, str, str], None]
"""Called with (cell, log name, text) for each log a sample produces."""


def _open(backend: SandboxBackend, task: Task, label: str) -> AbstractAsyncContextManager[Sandbox]:
    """A fresh sandbox for one sample, as the task's format asks (its own image, workspace path,
    network, limits). Planning (`evalrun.tasks.loader.runnable_on`) only lets a task through to a
    backend that can host what it asks."""
    spec = task.format.sandbox_spec
    return backend.open(label) if spec.is_default else backend.open(label, spec)


async def attempt_sample(
    task: Task,
    trial: int,
    agent: Agent,
    backend: SandboxBackend,
    limits: Limits,
    run_id: str,
    log: LogSink | None = None,
) -> SampleRecord:
    """One attempt at one cell. Never raises for anything the sample itself did."""
    key = CellKey(task_id=task.id, fingerprint=task.fingerprint, trial=trial)
    started = time.time()
    phases = Phases()
    fields: dict = {}

    def record(outcome: Outcome, **extra: Any) -> SampleRecord:
        return SampleRecord(
            run_id=run_id,
            task_id=task.id,
            fingerprint=task.fingerprint,
            trial=trial,
            outcome=outcome,
            phases=phases,
            started_at=started,
            finished_at=time.time(),
            **{**fields, **extra},
        )

    try:
        async with _open(backend, task, key.label) as box:
            clock = time.monotonic()
            try:
                setup_log = await task.format.prepare(box, limits.setup_s)
            except SetupFailed as exc:
                phases.setup = time.monotonic() - clock
                return record(
                    Outcome.error,
                    reason=str(exc),
                    timed_out_phase="setup" if exc.timed_out else None,
                )
            phases.setup = time.monotonic() - clock
            if log and setup_log:
                log(key, "setup.log", setup_log)

            plan = task.format.step_plan
            if plan is None:
                turn = await take_turn(
                    task, agent, box, limits.agent_s, limits.verify_s, limits.workspace_diff
                )
            else:
                try:
                    turn = await take_steps(
                        task,
                        plan,
                        agent,
                        box,
                        setup_s=limits.setup_s,
                        agent_s=limits.agent_s,
                        verify_s=limits.verify_s,
                        record_changes=limits.workspace_diff,
                    )
                except SetupFailed as exc:
                    return record(
                        Outcome.error,
                        reason=str(exc),
                        timed_out_phase="setup" if exc.timed_out else None,
                    )
                phases.setup = (phases.setup or 0.0) + turn.setup_s
                if log and turn.setup_log:
                    log(key, "setup.log", setup_log + turn.setup_log)
            result, verdict = turn.result, turn.verdict
            phases.agent = turn.agent_s
            if turn.changes is not None:
                fields["workspace_diff"] = turn.changes
                if log and turn.changes.files:
                    log(key, "workspace.diff", turn.changes.patch())
            if log:
                log(key, "agent.log", _agent_log(result))
            fields["agent"] = result.model_copy(
                update={"output": tail_text(result.output, AGENT_OUTPUT_CHARS)}
            )
            if turn.agent_timed_out:
                fields["timed_out_phase"] = "agent"

            phases.verify = verdict.duration_s
            if log:
                log(key, "verify.log", verdict.output)
            if verdict.timed_out:
                fields["timed_out_phase"] = "verify"
            reason = verdict.reason
            if verdict.outcome is Outcome.failed and result.error:
                reason = f"{reason} (agent: {result.error})"
            return record(
                verdict.outcome,
                reason=reason,
                verify_exit_code=verdict.exit_code,
                verify_output=verdict.output,
                scores=dict(verdict.scores),
            )
    except HarnessError as exc:  # the agent's CLI, the model gateway or provider: not the agent
        if isinstance(exc.result, AgentResult):
            fields["agent"] = exc.result
        return record(Outcome.error, reason=str(exc))
    except (SandboxError, OSError) as exc:
        return record(Outcome.error, reason=f"sandbox failed: {exc}")


def _agent_log(result: AgentResult) -> str:
    lines = [f"error: {result.error}"] if result.error else []
    for step in result.trajectory:
        lines.append(f"- {step.name} {step.args} ({step.duration_s or 0:.2f}s) {step.error or ''}")
        if step.result:
            lines.append("  " + step.result.replace("\n", "\n  "))
    lines.append("--- final output ---")
    lines.append(result.output)
    return "\n".join(lines)


async def run_sample(
    task: Task,
    trial: int,
    agent: Agent,
    backend: SandboxBackend,
    limits: Limits,
    run_id: str,
    log: LogSink | None = None,
    stop_reason: Callable[[], str | None] | None = None,
) -> SampleRecord:
    """`attempt_sample`, retrying harness errors up to `limits.max_retries` times with backoff
    (not once `stop_reason()` says the run must stop)."""
    retryer = async_retrying(
        1 + limits.max_retries,
        limits.retry_backoff_s,
        on_result=lambda rec: rec.outcome is Outcome.error,
        give_up=lambda: stop_reason is not None and stop_reason() is not None,  # e.g. budget
    )
    rec: SampleRecord = await retryer(
        attempt_sample, task, trial, agent, backend, limits, run_id, log
    )
    return rec.model_copy(update={"attempts": retryer.statistics["attempt_number"]})


Cell = tuple[Task, int]
OnRecord = Callable[[SampleRecord], None]


async def execute(
    cells: list[Cell],
    agent: Agent,
    backend: SandboxBackend,
    limits: Limits,
    *,
    run_id: str,
    concurrency: int,
    on_record: OnRecord,
    log: LogSink | None = None,
    on_interrupt: Callable[[signal.Signals], None] | None = None,
    judge: Judge | None = None,
    stop_reason: Callable[[], str | None] | None = None,
) -> signal.Signals | None:
    """Run every cell, at most `concurrency` at a time, calling `on_record` as each finishes.

    The first stop signal (Ctrl-C's SIGINT, SIGTERM, SIGHUP: `STOP_SIGNALS`) stops starting
    samples and cancels the ones in flight (their sandboxes and process trees are cleaned up; they
    get no record, so a resume runs them again), then calls `on_interrupt` with it; a second one
    exits the process at once (`exit_now`). Returns the signal that stopped the run, else None.
    `stop_reason()` (the agent's run budget) is asked before each sample starts: once it says why,
    no further sample starts and those cells get no record (a resume runs them).
    """
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(task: Task, trial: int) -> None:
        async with gate:
            if stop_reason is not None and stop_reason():
                return
            try:
                rec = await run_sample(
                    task, trial, agent, backend, limits, run_id, log, stop_reason
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
