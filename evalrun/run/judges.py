"""The judge seam: LLM judges score samples on each task's own criteria, never the verdict.

`judge=<option>` (conf/judge/) picks the judge; a task's `judges:` list (name,
task_introduction, evaluation_criteria) says what to score. Every scored sample (pass or fail;
a harness `error` has nothing to judge) of a task with judges gets one 0-1 score per judge in
`SampleRecord.scores[name]` and the judge's reason in `SampleRecord.judge_reasons[name]`. Judges
never change the verifier's verdict. A judgement that fails is recorded as a missing score (None)
with the error as its reason, never as 0.

Here: the `Judge` protocol, `judge=none` (`NoJudge`), and what a judge sees (`judge_input`): the
task prompt, the agent's final message, what the agent changed in the workspace (the sample's
recorded diff, `evalrun.run.workspace_diff`: every file added, removed or modified, whichever way
the agent changed it) and the tool calls themselves (name and arguments, bounded). A sample
without a recorded diff (an older run, a workspace too large to compare) falls back to the files
the tool calls wrote or edited. The judge that scores - Opik's G-Eval through LiteLLM - is
`evalrun.integrations.opik.geval.GEvalJudge`.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from evalrun.config.schema import NoJudgeConf
from evalrun.errors import UsageError
from evalrun.models.records import SampleRecord
from evalrun.tasks.loader import Task

INPUT_CHARS = 24_000  # the whole text handed to the judge
STEP_CHARS = 1_500  # one tool call's arguments and result
DIFF_CHARS = 12_000  # the workspace diff, within INPUT_CHARS
WRITING_TOOLS = ("write", "edit", "create", "patch", "replace", "append")
PATH_ARGS = ("path", "file_path", "filename", "file")


class Judge(Protocol):
    name: str

    def preflight(self) -> None:
        """Raise `UsageError` before the run when judging cannot work (key, SDK, model)."""
        ...

    async def judge(self, task: Task, record: SampleRecord) -> SampleRecord:
        """The record with judge scores added; never raises, never changes the outcome."""
        ...


class NoJudge:
    """`judge=none`: no scores."""

    def __init__(self, name: str = NoJudgeConf.name):
        self.name = name

    def preflight(self) -> None:
        return None

    async def judge(self, task: Task, record: SampleRecord) -> SampleRecord:
        return record


def build_judge(node: Any) -> Judge:
    """Instantiate the `judge` config group (absent: no judge); a bad option is a UsageError."""
    if node is None:
        return NoJudge()
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    try:
        return instantiate(node)
    except InstantiationException as exc:
        raise UsageError(f"judge: could not build {node.get('_target_')}: {exc}") from exc


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 20] + " ...[truncated]"


def written_files(record: SampleRecord) -> list[str]:
    """Paths the agent's writing tool calls touched, in first-touched order."""
    seen: dict[str, None] = {}
    for step in record.agent.trajectory:
        if any(word in step.name.lower() for word in WRITING_TOOLS):
            for key in PATH_ARGS:
                value = step.args.get(key)
                if isinstance(value, str) and value:
                    seen.setdefault(value, None)
    return list(seen)


def judge_input(task: Task, record: SampleRecord) -> str:
    """The text G-Eval scores: prompt, final message, files written, tool calls (bounded)."""
    agent = record.agent
    parts = [
        "## Task given to the agent\n" + task.spec.prompt.strip(),
        "## The agent's final message\n" + (agent.output.strip() or "(empty)"),
    ]
    if agent.error:
        parts.append("## The agent's run ended with an error\n" + agent.error)
    changes = record.workspace_diff
    if changes is not None and not changes.skipped:
        parts.append(
            f"## What the agent changed in the workspace ({changes.summary()})\n"
            + (_clip(changes.patch(), DIFF_CHARS) if changes.files else "(nothing)")
        )
    else:
        files = written_files(record)
        parts.append(
            "## Files the agent wrote or edited (from its tool calls)\n"
            + ("\n".join(f"- {f}" for f in files) if files else "(none recorded)")
        )
    steps = []
    for n, step in enumerate(agent.trajectory, 1):
        args = json.dumps(step.args, ensure_ascii=False, default=str)
        line = f"{n}. {step.name} {args}"
        if step.error:
            line += f"\n   error: {step.error}"
        elif step.result:
            line += f"\n   result: {step.result}"
        steps.append(_clip(line, STEP_CHARS))
    if steps:
        parts.append(f"## The agent's tool calls ({len(steps)}, in order)\n" + "\n".join(steps))
    return _clip("\n\n".join(parts), INPUT_CHARS)
