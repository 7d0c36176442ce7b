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
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from evalrun.agents.base import Agent
from evalrun.config import EvalConfig, TimeoutsConf
from evalrun.errors import HarnessError, SandboxError
from evalrun.formats.base import SetupFailed
from evalrun.records import AgentResult, CellKey, Outcome, Phases, SampleRecord
from evalrun.retry import async_retrying
from evalrun.sandbox.base import Sandbox, SandboxBackend
from evalrun.sandbox.output import tail_text
from evalrun.tasks import Task
from evalrun.turns import take_steps, take_turn

if TYPE_CHECKING:
    from evalrun.judges import Judge

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
    network, limits). Planning (`evalrun.tasks.runnable_on`) only lets a task through to a
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
    on_interrupt: Callable[[], None] | None = None,
    judge: Judge | None = None,
    stop_reason: Callable[[], str | None] | None = None,
) -> bool:
    """Run every cell, at most `concurrency` at a time, calling `on_record` as each finishes.

    The first Ctrl-C (SIGINT) stops starting samples and cancels the ones in flight (their
    sandboxes and process trees are cleaned up; they get no record, so a resume runs them again);
    a second one exits the process at once. Returns True when the run was interrupted.
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
        on_record(rec)

    jobs = [asyncio.create_task(one(task, trial)) for task, trial in cells]
    interrupted = False

    def interrupt() -> None:
        nonlocal interrupted
        if interrupted:  # second Ctrl-C: every finished record is already on disk
            exit_now(backend, "interrupted again: ending open sandboxes and exiting now")
        interrupted = True
        if on_interrupt:
            on_interrupt()
        for job in jobs:
            job.cancel()

    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGINT)
    try:
        loop.add_signal_handler(signal.SIGINT, interrupt)
        handling = True
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
        handling = False
    try:
        results = await asyncio.gather(*jobs, return_exceptions=True)
    finally:
        if handling:
            loop.remove_signal_handler(signal.SIGINT)  # (which installs Python's default)
            if callable(previous) and previous is not signal.default_int_handler:
                signal.signal(signal.SIGINT, previous)
    for result in results:  # e.g. the store could not write: stop loudly, never drop records
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise result
    return interrupted


EXIT_INTERRUPTED = 130


def exit_now(backend: SandboxBackend, message: str) -> NoReturn:
    """Leave the process at once, without a traceback: end the backend's open sandboxes
    (`abandon`: quick, or left marked for the next preflight) and exit 130."""
    with suppress(OSError):
        os.write(2, f"\n{message}\n".encode())
    with suppress(Exception):
        backend.abandon()
    os._exit(EXIT_INTERRUPTED)
