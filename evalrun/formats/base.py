"""What every task format maps onto: the spec, the verdict, and the `TaskFormat` seam.

A format owns three moments of a sample's life, because only it knows where its files are and
what its scripts expect:

```
prepare(sandbox)          fresh workspace -> the state the agent starts from   (engine)
solve(sandbox)            the gold solution, applied as an agent would         (agent=oracle, check)
grade(sandbox, answer)    hidden verifier injected after the agent -> Verdict  (grading)
```

The engine, the oracle agent, grading and `evalrun check` call these methods and never ask which
format a task is in. A format says what its samples' sandboxes must give (`sandbox_spec`: its own
image, a workspace path, a network policy, limits); `cannot_run_on(backend)` lets planning skip
(or refuse) a task a backend cannot host, with the reason.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalrun.records import AgentResult, Outcome
from evalrun.sandbox.base import Sandbox, SandboxBackend, SandboxSpec
from evalrun.sandbox.base import TaskImage as TaskImage  # re-exported: formats describe images


class Difficulty(StrEnum):
    easy = "easy"
    medium = "medium"
    hard = "hard"


class JudgeSpec(BaseModel):
    """A G-Eval judge for one task: scores samples 0-1, never overrides the oracle."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    task_introduction: str = Field(min_length=1)
    evaluation_criteria: str = Field(min_length=1)


class TaskSpec(BaseModel):
    """What an agent and a report need to know about a task, whatever its format.

    For the native format this is exactly task.yaml (unknown keys rejected); other formats fill it
    from their own metadata.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    prompt: str
    max_steps: int = Field(gt=0)
    difficulty: Difficulty
    tags: tuple[str, ...] = ()
    judges: tuple[JudgeSpec, ...] = ()
    agent_timeout_s: float | None = Field(default=None, gt=0)

    @field_validator("prompt")
    @classmethod
    def _prompt_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


@dataclass(frozen=True)
class Verdict:
    """The oracle's answer for one sample.

    `scores` carries numbers the verifier reported beside the verdict (a Harbor reward, kept as
    `reward` even when it is 1 or 0); the engine copies them onto `SampleRecord.scores`.
    """

    outcome: Outcome
    reason: str | None
    exit_code: int | None
    output: str
    duration_s: float
    timed_out: bool = False
    scores: Mapping[str, float] = field(default_factory=dict)


class SetupFailed(Exception):
    """Preparing the workspace failed: the sample is an `error`, never scored against the agent."""

    def __init__(self, reason: str, timed_out: bool = False):
        super().__init__(reason)
        self.timed_out = timed_out


def in_container(sandbox: Sandbox) -> bool:
    """True when the sandbox is a container whose absolute paths (`/tests`, `/logs`) are its own.

    Backends say so with an `is_container = True` attribute on their sandboxes (`docker`,
    `modal`); on `local` and `bwrap` absolute paths outside the sample's folders are the host's or
    read-only, so formats must not write there.
    """
    return bool(getattr(sandbox, "is_container", False))


class FolderLayout(Protocol):
    """The two paths every format's layout has (used in error messages)."""

    @property
    def root(self) -> Path: ...

    @property
    def task_file(self) -> Path: ...


@dataclass(frozen=True)
class Step:
    """One turn of a multi-step task: the agent works on `spec.prompt` in the workspace the
    earlier turns left; `format` prepares the turn (its own files), solves it (agent=oracle) and
    grades it, like a task of its own."""

    name: str
    spec: TaskSpec
    format: TaskFormat


class StepPlan(Protocol):
    """How a multi-step task's turns run one after another in one sandbox, and add up."""

    steps: tuple[Step, ...]

    def stop_reason(self, step: Step, verdict: Verdict) -> str | None:
        """Why no later step runs after `step` ended with `verdict` (None: go on)."""
        ...

    def combine(self, graded: Sequence[tuple[Step, Verdict]]) -> Verdict:
        """The task's verdict from the verdicts of the steps that ran, in order."""
        ...


class TaskFormat(Protocol):
    """How one loaded task prepares, solves and grades a sample. See the module docstring.

    `prepare` raises `SetupFailed`; all methods may raise `SandboxError`/`OSError` when the
    sandbox itself fails (the engine records those as `error`).
    """

    name: str  # the format's name, shown in plans: "evalrun" or "harbor"
    layout: FolderLayout
    sandbox_spec: SandboxSpec  # SandboxSpec(): the backend as configured
    step_plan: StepPlan | None  # None: one turn - prepare, the agent, grade
    warnings: tuple[str, ...]  # said once per run (e.g. keys the format's runner ignores)
    kept_fields: Mapping[str, Any]  # what the task file says that evalrun does not use

    def cannot_run_on(self, backend: SandboxBackend) -> str | None:
        """Why this task cannot run on `backend` (None: it can)."""
        ...

    def wrong_overlays(self) -> list[Path]:
        """Near-miss overlays `evalrun check` must see fail (may be empty)."""
        ...

    async def prepare(self, sandbox: Sandbox, timeout_s: float) -> str:
        """Build the starting workspace; return its log."""
        ...

    async def solve(self, sandbox: Sandbox) -> AgentResult:
        """Apply the gold solution; its final answer is the result's output."""
        ...

    async def grade(self, sandbox: Sandbox, answer: str, timeout_s: float) -> Verdict:
        """Inject the hidden verifier, run it, and judge."""
        ...


def failure_reason(output: str, exit_code: int | None, script: str) -> str:
    """The verifier's own `FAIL: ...` line, else its last line, else the exit code."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("FAIL"):
            return line[:500]
    if lines:
        return lines[-1][:500]
    return f"{script} exited {exit_code} without output"


async def inject(sandbox: Sandbox, host_dir: Path, dest: str = ".") -> None:
    """Copy a hidden folder (verify/, tests/) into the workspace over whatever the agent left.

    First clears what would make the copy fail: a folder or symlink where a file goes, a file or
    symlink where a folder goes, a read-only file. Without this an agent could turn its own `fail`
    into a harness `error` - retried, and kept out of every pass rate - by planting one.
    """
    steps = []
    for path in sorted(host_dir.rglob("*")):
        rel = shlex.quote(posixpath.join(dest, path.relative_to(host_dir).as_posix()))
        if path.is_dir() and not path.is_symlink():
            steps.append(
                f"if [ -L {rel} ] || {{ [ -e {rel} ] && [ ! -d {rel} ]; }}; then rm -f {rel}; fi;"
                f" [ -d {rel} ] && chmod u+rwx {rel};"
            )
        else:
            steps.append(
                f"if [ -L {rel} ] || [ -d {rel} ]; then rm -rf {rel}; fi;"
                f" [ -e {rel} ] && chmod u+w {rel};"
            )
    if steps:
        await sandbox.exec("\n".join([*steps, "true"]), timeout_s=60)
    await sandbox.put(host_dir, dest)
