"""The agent's part of a sample: one turn (the agent, then the oracle), or a multi-step task's
turns in order in the same sandbox.

A turn gives the agent the task's prompt with its timeout, records a crash or a timeout on the
result (the sample is still graded), then grades the workspace with the task's format. A
multi-step task (`TaskFormat.step_plan`) takes one turn per step: the step's own files arrive
first (`Step.format.prepare`), the agent gets the step's prompt, the step is graded, and the
plan decides whether the next step runs and how the steps' verdicts make the task's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from contextlib import suppress
from dataclasses import dataclass, replace

from evalrun.agents.base import Agent, tracking_progress
from evalrun.errors import HarnessError, SandboxError
from evalrun.models.records import AgentResult, Outcome, ToolCall, Usage, WorkspaceDiff
from evalrun.run.grading import grade
from evalrun.run.workspace_diff import take_snapshot
from evalrun.sandbox.base import Sandbox
from evalrun.tasks.base import SetupFailed, Step, StepPlan, Verdict
from evalrun.tasks.loader import Task


@dataclass(frozen=True)
class Turn:
    """What the agent did and what the oracle said, with the seconds each took."""

    result: AgentResult
    agent_timed_out: bool
    agent_s: float
    verdict: Verdict
    setup_s: float = 0.0  # the steps' own preparation (multi-step tasks)
    setup_log: str = ""
    changes: WorkspaceDiff | None = None  # what the agent changed in the workspace


class LimitExceeded(Exception):
    """The sandbox went over one of its resource limits; the message says which."""


async def run_agent(
    agent: Agent, task: Task, box: Sandbox, timeout_s: float
) -> tuple[AgentResult, bool]:
    """The agent's result and whether it timed out; a crash is recorded on the result, and so is
    a resource limit the sandbox went over (the agent is stopped there)."""
    with tracking_progress() as so_far:
        try:
            run = _within_limits(agent.run(task, box), box)
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


async def take_turn(
    task: Task,
    agent: Agent,
    box: Sandbox,
    agent_s: float,
    verify_s: float,
    record_changes: bool = True,
) -> Turn:
    """The agent on `task` (its own timeout wins over `agent_s`), then the oracle; what the
    agent changed in the workspace is recorded in between (`evalrun.run.workspace_diff`)."""
    before = await take_snapshot(box) if record_changes else None
    clock = time.monotonic()
    result, timed_out = await run_agent(agent, task, box, task.spec.agent_timeout_s or agent_s)
    took = time.monotonic() - clock
    verdict, changes = await grade(task, box, result.output, verify_s, before)
    return Turn(result, timed_out, took, verdict, changes=changes)


async def take_steps(
    task: Task,
    plan: StepPlan,
    agent: Agent,
    box: Sandbox,
    *,
    setup_s: float,
    agent_s: float,
    verify_s: float,
    record_changes: bool = True,
) -> Turn:
    """Each step in turn: its files, the agent on its prompt, its grading; then the task's
    verdict from the plan. Raises `SetupFailed` only when the first step cannot be prepared
    (later on, the workspace is the agent's doing: that step fails)."""
    graded: list[tuple[Step, Verdict]] = []
    turns: list[tuple[Step, Turn]] = []
    logs, prepared = [], 0.0
    for index, step in enumerate(plan.steps):
        clock = time.monotonic()
        if index:  # the agent's next turn: its own rights, HOME and TMPDIR again
            await box.begin_agent()
        try:
            logs.append(await step.format.prepare(box, setup_s))
        except SetupFailed as exc:
            if index == 0:
                raise SetupFailed(f"step {step.name!r}: {exc}", exc.timed_out) from exc
            reason = f"preparing the step failed after earlier steps: {exc}"
            graded.append((step, Verdict(Outcome.failed, reason, None, "", 0.0)))
            break
        finally:
            prepared += time.monotonic() - clock
        view = replace(task, spec=step.spec, format=step.format)
        turn = await take_turn(view, agent, box, agent_s, verify_s, record_changes)
        turns.append((step, turn))
        graded.append((step, turn.verdict))
        if plan.stop_reason(step, turn.verdict):
            break
    return Turn(
        result=merge_results(turns),
        agent_timed_out=any(t.agent_timed_out for _, t in turns),
        agent_s=sum(t.agent_s for _, t in turns),
        verdict=plan.combine(graded),
        setup_s=prepared,
        setup_log="".join(logs),
        changes=merge_changes(turns),
    )


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
