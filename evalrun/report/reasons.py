"""Why a sample did not pass, in one line - the same line in the terminal, `evalrun show` and
report.html.

A sample's `reason` is written by the engine from the verdict (the verifier's own `FAIL: ...`
line, else its last line; a verifier timeout) with the agent's error appended (`... (agent:
RuntimeError: boom)`). Read back, the agent's part comes first: an agent that crashed or timed
out is why the verifier failed. `failure_groups` puts a run's failures and errors together by
task, identical reasons once with the trials they share.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from evalrun.models.records import Outcome, SampleRecord
from evalrun.report.rundata import clean_text

LINE_CHARS = 200  # one reason line in the terminal and in the task table


def first_line(text: str | None, limit: int = LINE_CHARS) -> str:
    """The first non-empty line of `text`, without colour codes, cut at `limit` characters."""
    line = next((s.strip() for s in clean_text(text).splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def why_parts(record: SampleRecord) -> list[str]:
    """Why `record` did not pass, whole: the agent's error (or timeout) first, then the
    verdict's reason; a harness error's reason alone. [] for a pass without a reason."""
    if record.outcome is Outcome.error:
        return [record.reason or "harness error"]
    agent_error = record.agent.error
    verdict = record.reason or ""
    if agent_error and verdict.endswith(f" (agent: {agent_error})"):
        verdict = verdict[: -len(f" (agent: {agent_error})")]
    parts = []
    if agent_error:
        timed_out = record.timed_out_phase == "agent"
        parts.append(agent_error if timed_out else f"agent: {agent_error}")
    if verdict.strip():
        parts.append(verdict)
    return parts


def why(record: SampleRecord) -> str:
    """One line saying why `record` did not pass ("" for a pass without a reason)."""
    return first_line(" → ".join(first_line(p, 10_000) for p in why_parts(record)))


@dataclass
class FailureGroup:
    """One task's failures (or errors) sharing a reason, with the trials that had it."""

    task_id: str
    outcome: Outcome
    reason: str
    trials: list[int] = field(default_factory=list)

    def label(self) -> str:
        shown = ",".join(f"#{t}" for t in self.trials)
        return f"{self.task_id} {shown}"


def failure_groups(records: Iterable[SampleRecord]) -> list[FailureGroup]:
    """Failures and errors by task (in the records' order), one group per distinct reason."""
    groups: dict[tuple[str, Outcome, str], FailureGroup] = {}
    for rec in records:
        if rec.outcome is Outcome.passed:
            continue
        reason = why(rec)
        key = (rec.task_id, rec.outcome, reason)
        groups.setdefault(key, FailureGroup(rec.task_id, rec.outcome, reason)).trials.append(
            rec.trial
        )
    return list(groups.values())
