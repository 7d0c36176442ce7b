"""One attempt at one cell, as one object: a `Trial`, with a method per phase of the sample.

```
run(backend)    open a fresh sandbox, as the task's format asks (`SandboxSpec`), then:
  setup         the format prepares the workspace                   SetupFailed -> error
  turn          per task, or per step of a multi-step task:
    act           the agent on the prompt, within its timeout and the sandbox's limits
    collect       the agent phase ends; what it changed in the workspace is recorded, and
                  the workspace itself is kept for a regrade (`evalrun.run.final_workspace`)
    verify        the task's hidden verifier is injected and run -> Verdict; a separate
                  verifier (`TaskFormat.separate_verifier`) runs in a fresh sandbox of its
                  own, with only the agent's artifacts carried over (`verify_apart`)
  record        the one `SampleRecord` of the attempt, whatever happened
```

A multi-step task (`TaskFormat.step_plan`) takes one turn per step in the same sandbox: the
step's own files arrive first (`Step.format.prepare`), the agent gets the step's prompt, the
step is graded, and the plan decides whether the next step runs and how the steps' verdicts
make the task's.

Nothing one sample does can abort the run: an agent crash, timeout or resource limit is noted on
its result and the sample is still graded; the harness failing (the sandbox, the agent's CLI, the
model gateway) makes the attempt an `error` (retried by `evalrun.run.engine.run_sample`).
How a verifier is run and read is the format's business (`TaskFormat.grade`); what grading adds
are the rules every format shares (`Trial.grade`):

1. Before any of it, the agent phase ends (`Sandbox.end_agent`): every process the agent left
   is killed and checked gone, and the verifier gets a fresh HOME and TMPDIR. Then, before the
   hidden verifier goes in, what the agent changed is recorded (`evalrun.run.workspace_diff`)
   and the verifier's python start-up hook is written (`evalrun.verifier.hardening`; unless the
   task or the run turned verifier hardening off) - the two at once: one reads the workspace,
   the other writes only the harness's private folder.
2. Once the agent phase has begun, anything that stops the verifier from reaching a verdict
   because of the workspace's state - a permission taken away, a path planted where a hidden
   file goes, a file missing, the verifier crashing, no reward file - is a `fail` with a reason
   naming it. File and process failures inside the sandbox surface as `OSError`.
3. `error` is only what the agent cannot cause: the sandbox itself failing (`SandboxError`:
   engine down, bubblewrap not starting, an agent process the harness could not kill). Errors
   are retried and kept out of pass rates, so an agent must never be able to turn its fail into
   one.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evalrun.agents.base import Agent, tracking_progress
from evalrun.config.schema import EvalConfig, TimeoutsConf
from evalrun.errors import HarnessError, SandboxError
from evalrun.models.records import (
    AgentResult,
    CellKey,
    KeptWorkspace,
    Outcome,
    Phases,
    SampleRecord,
    ToolCall,
    Usage,
    WorkspaceDiff,
)
from evalrun.models.writable import tail_text
from evalrun.run import artifacts
from evalrun.run.final_workspace import WorkspaceKeeper
from evalrun.run.workspace_diff import Snapshot, changes_since, take_snapshot
from evalrun.sandbox.base import Sandbox, SandboxBackend
from evalrun.tasks.base import SeparateVerifier, SetupFailed, Step, StepPlan, Verdict
from evalrun.tasks.loader import Task
from evalrun.verifier import hardening

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


@dataclass(frozen=True)
class Turn:
    """What the agent did and what the verifier said, with the seconds the agent took."""

    result: AgentResult
    agent_timed_out: bool
    agent_s: float
    verdict: Verdict
    changes: WorkspaceDiff | None = None  # what the agent changed in the workspace
    kept: KeptWorkspace | None = None  # whether the final workspace was kept for a regrade


class LimitExceeded(Exception):
    """The sandbox went over one of its resource limits; the message says which."""


class Trial:
    """One attempt at cell (`task`, `trial`) by `agent`; `run` it once (see the module
    docstring). `log` receives the sample's logs (setup, agent, workspace diff, verifier);
    `keeper` keeps its final workspace (None: not kept)."""

    def __init__(
        self,
        task: Task,
        trial: int,
        agent: Agent,
        limits: Limits,
        run_id: str,
        log: LogSink | None = None,
        keeper: WorkspaceKeeper | None = None,
    ):
        self.task = task
        self.keeper = keeper
        self.kept: KeptWorkspace | None = None
        self.agent = agent
        self.limits = limits
        self.run_id = run_id
        self.key = CellKey.of(task, trial)
        self.phases = Phases()
        self.started = time.time()
        self._log = log
        self._setup_log = ""
        self._backend: SandboxBackend | None = None
        self._kept: str | None = None  # where the sample's workspace stays (keep_workspaces)

    async def run(self, backend: SandboxBackend) -> SampleRecord:
        """The attempt's record. Never raises for anything the sample itself did."""
        self.started = time.time()
        self._backend = backend
        try:
            async with self._open(backend) as box:
                self._kept = box.kept_at
                await self.setup(box)
                plan = self.task.format.step_plan
                turn = await (self.turn(box) if plan is None else self.steps(box, plan))
                return self.record(turn)
        except SetupFailed as exc:
            phase = "setup" if exc.timed_out else None
            return self._record(Outcome.error, reason=str(exc), timed_out_phase=phase)
        except HarnessError as exc:  # the agent's CLI, the model gateway or provider: not the agent
            agent = exc.result if isinstance(exc.result, AgentResult) else None
            return self._record(Outcome.error, reason=str(exc), agent=agent)
        except (SandboxError, OSError) as exc:
            return self._record(Outcome.error, reason=f"sandbox failed: {exc}")

    def _open(self, backend: SandboxBackend) -> AbstractAsyncContextManager[Sandbox]:
        """A fresh sandbox, as the task's format asks (its own image, workspace path, network,
        limits). Planning (`evalrun.tasks.loader.runnable_on`) only lets a task through to a
        backend that can host what it asks."""
        spec = self.task.format.sandbox_spec
        label = self.key.label
        return backend.open(label) if spec.is_default else backend.open(label, spec)

    # --- setup ---------------------------------------------------------------------------------
    async def setup(self, box: Sandbox, step: Step | None = None) -> None:
        """Prepare the workspace for the task (or for one step of it); raises `SetupFailed`."""
        fmt = self.task.format if step is None else step.format
        clock = time.monotonic()
        try:
            said = await fmt.prepare(box, self.limits.setup_s)
        finally:
            self.phases.setup = (self.phases.setup or 0.0) + time.monotonic() - clock
        if said:
            self._setup_log += said
            self._write_log("setup.log", self._setup_log)

    # --- the agent's turns ---------------------------------------------------------------------
    async def turn(self, box: Sandbox, task: Task | None = None) -> Turn:
        """The agent on `task` (the trial's, or a step's view of it), then its grading; what the
        agent changed in the workspace is recorded in between."""
        task = task or self.task
        before = await take_snapshot(box) if self.limits.workspace_diff else None
        clock = time.monotonic()
        result, timed_out = await self.act(box, task)
        took = time.monotonic() - clock
        verdict, changes = await self.grade(box, task, result.output, before)
        return Turn(result, timed_out, took, verdict, changes, self.kept)

    async def steps(self, box: Sandbox, plan: StepPlan) -> Turn:
        """Each step in turn: its files, the agent on its prompt, its grading; then the task's
        verdict from the plan. Raises `SetupFailed` only when the first step cannot be prepared
        (later on, the workspace is the agent's doing: that step fails)."""
        graded: list[tuple[Step, Verdict]] = []
        turns: list[tuple[Step, Turn]] = []
        for index, step in enumerate(plan.steps):
            if index:  # the agent's next turn: its own rights, HOME and TMPDIR again
                await box.begin_agent()
            try:
                await self.setup(box, step)
            except SetupFailed as exc:
                if index == 0:
                    raise SetupFailed(f"step {step.name!r}: {exc}", exc.timed_out) from exc
                reason = f"preparing the step failed after earlier steps: {exc}"
                graded.append((step, Verdict(Outcome.failed, reason, None, "", 0.0)))
                break
            turn = await self.turn(box, replace(self.task, spec=step.spec, format=step.format))
            turns.append((step, turn))
            graded.append((step, turn.verdict))
            if plan.stop_reason(step, turn.verdict):
                break
        return Turn(
            result=merge_results(turns),
            agent_timed_out=any(t.agent_timed_out for _, t in turns),
            agent_s=sum(t.agent_s for _, t in turns),
            verdict=plan.combine(graded),
            changes=merge_changes(turns),
            kept=self.kept,
        )

    async def act(self, box: Sandbox, task: Task) -> tuple[AgentResult, bool]:
        """The agent's result and whether it timed out (the task's own timeout wins over
        `limits.agent_s`); a crash is recorded on the result, and so is a resource limit the
        sandbox went over (the agent is stopped there)."""
        timeout_s = task.spec.agent_timeout_s or self.limits.agent_s
        with tracking_progress() as so_far:
            try:
                run = _within_limits(self.agent.run(task, box), box)
                return await asyncio.wait_for(run, timeout_s), False
            except TimeoutError:  # keep whatever the agent reported doing (and spending) so far
                error = f"agent timed out after {timeout_s:g}s"
                return so_far.model_copy(update={"error": error}), True
            except LimitExceeded as exc:
                return so_far.model_copy(update={"error": f"stopped: {exc}"}), False
            except (SandboxError, HarnessError):  # not the agent's doing: the sample is an error
                raise
            except Exception as exc:  # the agent crashed: record it, still grade
                return AgentResult(error=f"{type(exc).__name__}: {exc}"), False

    # --- collect and verify --------------------------------------------------------------------
    async def grade(
        self, box: Sandbox, task: Task, answer: str, before: Snapshot | None = None
    ) -> tuple[Verdict, WorkspaceDiff | None]:
        """End the agent phase, record what changed since `before` (None: nothing recorded),
        then run `task`'s verifier on the agent's `answer` - by the rules of the module
        docstring: the sandbox failing is an `error`, the workspace's state a `fail`. The
        verifier's hook is written while the workspace is listed: the listing reads only the
        workspace, the hook goes only into the harness's private folder."""
        changes = None
        try:
            await box.end_agent()
            apart = task.format.separate_verifier
            if apart is not None:
                changes = await self.collect(box, before)
                if self.keeper is not None:
                    reason = "a task whose verifier runs apart is graded on its artifacts"
                    self.kept = KeptWorkspace(kept=False, reason=reason)
                return await self.verify_apart(box, task, apart, answer), changes
            hook = asyncio.ensure_future(self.prepare_verifier(box, task))
            try:
                changes = await self.collect(box, before)
                self.kept = await self.keep(box, task)
            finally:
                await asyncio.wait({hook})  # never raises; the hook's own error comes next
            hook.result()
            return await self.verify(box, task, answer), changes
        except SandboxError as exc:
            return Verdict(Outcome.error, f"verify could not run: {exc}", None, "", 0.0), changes
        except OSError as exc:
            reason = f"the verifier could not run in the workspace the agent left: {exc}"
            return Verdict(Outcome.failed, reason, None, "", 0.0), changes

    async def collect(self, box: Sandbox, before: Snapshot | None) -> WorkspaceDiff | None:
        """What the agent changed in the workspace since `before` (None: nothing is recorded).
        Only after `Sandbox.end_agent`; never raises (a listing that fails is a note)."""
        return await changes_since(box, before) if before is not None else None

    async def keep(self, box: Sandbox, task: Task) -> KeptWorkspace | None:
        """Keep the workspace as the agent left it, for a regrade (None: keeping is off). Only
        after `Sandbox.end_agent`, before the verifier's files go in; never raises for the
        workspace's state. A multi-step task's is not kept: its steps' files arrive between
        turns, so no one workspace can be graded again."""
        if self.keeper is None:
            return None
        if self.task.format.step_plan is not None:
            return KeptWorkspace(kept=False, reason="a multi-step task's workspace is not kept")
        return await self.keeper.keep(box, self.key, self.limits.verify_s)

    async def prepare_verifier(self, box: Sandbox, task: Task) -> None:
        """Write the verifier's python start-up hook (unless the task or the run turned verifier
        hardening off). Only after `Sandbox.end_agent`."""
        if task.verifier_hardening:
            await hardening.install(box, task)

    async def verify(self, box: Sandbox, task: Task, answer: str) -> Verdict:
        """The task's hidden verifier, injected and run by its format (`TaskFormat.grade`)."""
        return await task.format.grade(box, answer, self.limits.verify_s)

    async def verify_apart(
        self, box: Sandbox, task: Task, apart: SeparateVerifier, answer: str
    ) -> Verdict:
        """The task's verifier in a fresh sandbox of its own (`apart.spec`; set up as the agent's
        was when `apart.set_up`), where only the artifacts of the agent's sandbox `box` arrive
        (`evalrun.run.artifacts`); that sandbox is removed once the verdict is in. Only after
        `box.end_agent()`. A set-up that fails there is an `error`: not the agent's doing."""
        if self._backend is None:
            raise SandboxError("a separate verifier needs the trial's backend (Trial.run)")
        with tempfile.TemporaryDirectory(prefix="evalrun-artifacts-") as staging:
            carried, log = await artifacts.collect(box, apart, Path(staging))
            if log:
                self._write_log("collect.log", log)
            label = f"{self.key.label}.verifier"
            async with self._backend.open(label, apart.spec) as judge:
                if apart.set_up:
                    try:
                        await task.format.prepare(judge, self.limits.setup_s)
                    except SetupFailed as exc:
                        reason = f"the verifier's sandbox could not be set up: {exc}"
                        return Verdict(Outcome.error, reason, None, "", 0.0)
                await judge.end_agent()
                await artifacts.restore(judge, carried)
                await self.prepare_verifier(judge, task)
                return await self.verify(judge, task, answer)

    # --- record --------------------------------------------------------------------------------
    def record(self, turn: Turn) -> SampleRecord:
        """The record of an attempt that reached a verdict; its logs are written here too."""
        result, verdict, changes = turn.result, turn.verdict, turn.changes
        self.phases.agent = turn.agent_s
        self.phases.verify = verdict.duration_s
        if changes is not None and changes.files:
            self._write_log("workspace.diff", changes.patch())
        self._write_log("agent.log", agent_log(result))
        self._write_log("verify.log", verdict.output)
        reason = verdict.reason
        if verdict.outcome is Outcome.failed and result.error:
            reason = f"{reason} (agent: {result.error})"
        timed_out = "verify" if verdict.timed_out else "agent" if turn.agent_timed_out else None
        output = tail_text(result.output, AGENT_OUTPUT_CHARS)
        return self._record(
            verdict.outcome,
            reason=reason,
            agent=result.model_copy(update={"output": output}),
            workspace_diff=changes,
            final_workspace=turn.kept,
            timed_out_phase=timed_out,
            verify_exit_code=verdict.exit_code,
            verify_output=verdict.output,
            scores=dict(verdict.scores),
        )

    def _record(self, outcome: Outcome, **fields: Any) -> SampleRecord:
        """The one place a trial's `SampleRecord` is built (fields left None keep defaults)."""
        given = {name: value for name, value in fields.items() if value is not None}
        return SampleRecord(
            run_id=self.run_id,
            task_id=self.key.task_id,
            fingerprint=self.key.fingerprint,
            trial=self.key.trial,
            outcome=outcome,
            phases=self.phases,
            started_at=self.started,
            finished_at=time.time(),
            workspace_kept=self._kept,
            **given,
        )

    def _write_log(self, name: str, text: str) -> None:
        if self._log is not None:
            self._log(self.key, name, text)


async def _within_limits(run: Awaitable[AgentResult], box: Sandbox) -> AgentResult:
    """Await the agent's run, asking the sandbox every `limit_poll_s` whether it is over a
    resource limit; when it is, cancel the run and raise `LimitExceeded`. A limit found broken
    only after the run ended is noted on the result's error."""
    poll = box.limit_poll_s
    if poll is None:
        return await run
    agent = asyncio.ensure_future(run)
    try:
        while not (await asyncio.wait({agent}, timeout=poll))[0]:
            reason = await box.over_limit()
            if reason:
                raise LimitExceeded(reason)
        result = agent.result()
    finally:
        if not agent.done():
            agent.cancel()
            with suppress(asyncio.CancelledError, Exception):
                await agent
    reason = await box.over_limit()
    if reason is None:
        return result
    return result.model_copy(update={"error": "; ".join(filter(None, [result.error, reason]))})


def agent_log(result: AgentResult) -> str:
    """The agent's trajectory as the text of its `agent.log`."""
    lines = [f"error: {result.error}"] if result.error else []
    for step in result.trajectory:
        lines.append(f"- {step.name} {step.args} ({step.duration_s or 0:.2f}s) {step.error or ''}")
        if step.result:
            lines.append("  " + step.result.replace("\n", "\n  "))
    lines.append("--- final output ---")
    lines.append(result.output)
    if result.stderr:
        lines += ["--- stderr ---", result.stderr]
    return "\n".join(lines)


def merge_changes(turns: list[tuple[Step, Turn]]) -> WorkspaceDiff | None:
    """The steps' workspace diffs as one, each file marked with its step."""
    diffs = [(step, turn.changes) for step, turn in turns if turn.changes is not None]
    if not diffs:
        return None
    files = [f.model_copy(update={"step": step.name}) for step, d in diffs for f in d.files]
    skipped = "; ".join(f"step {step.name!r}: {d.skipped}" for step, d in diffs if d.skipped)
    return WorkspaceDiff(files=files, skipped=skipped or None)


def merge_results(turns: list[tuple[Step, Turn]]) -> AgentResult:
    """One `AgentResult` for all steps: each step's calls after a `step` marker, usage summed,
    the last step's final message, the first step's error."""
    trajectory: list[ToolCall] = []
    usage = Usage()
    costs = []
    errors = []
    for step, turn in turns:
        trajectory.append(ToolCall(name="step", args={"name": step.name}))
        trajectory.extend(turn.result.trajectory)
        got = turn.result.usage
        for name in ("requests", "input_tokens", "output_tokens", "cache_read_tokens"):
            setattr(usage, name, getattr(usage, name) + getattr(got, name))
        usage.cache_write_tokens += got.cache_write_tokens
        costs.append(got.cost_usd)
        if turn.result.error:
            errors.append(f"step {step.name!r}: {turn.result.error}")
    if costs and all(c is not None for c in costs):
        usage.cost_usd = sum(c for c in costs if c is not None)
        usage.cost_source = next((t.result.usage.cost_source for _, t in turns), None)
    output = turns[-1][1].result.output if turns else ""
    return AgentResult(
        output=output, trajectory=trajectory, usage=usage, error=errors[0] if errors else None
    )
