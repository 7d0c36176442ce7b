"""plan.json as data: what a run set out to do, fixed before its first sample - its kind, run id,
tasks with their fingerprints, trials and the suite's skipped tasks. Written through
`evalrun.rundir.store.RunStore.write_plan`, read by `evalrun.rundir.log.RunLog`."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalrun.models.records import CellKey, SkippedEntry


class RunKind(StrEnum):
    """What a run directory records: a run of task folders, of the behaviour probes, or an
    online evaluation of a live Opik project (threads as tasks, one trial each)."""

    tasks = "tasks"
    probes = "probes"
    online = "online"


class PlannedTask(BaseModel):
    """One task of plan.json. `fields`: what the task's file says that evalrun does not use;
    `prompt`: the prompt the agent was given (shown in report.html and `evalrun show`)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    fingerprint: str = ""
    difficulty: str = "unknown"
    tags: list[str] = Field(default_factory=list)
    format: str | None = None
    prompt: str | None = None  # what the agent was given (None: an online run's thread)
    fields: dict[str, Any] = Field(default_factory=dict)


class RegradeSource(BaseModel):
    """What a regrade run (`evalrun regrade`) graded again: the source run, by id and folder."""

    run_id: str
    run_dir: str


class PlanFile(BaseModel):
    """plan.json: what a run set out to do, fixed before its first sample. Written by the
    runner (`RunPlan.to_plan_file`) and by `evalrun online`, through `RunStore.write_plan`."""

    model_config = ConfigDict(extra="ignore")

    schema_version: int
    kind: RunKind
    run_id: str
    run_dir: str | None = None
    tasks_dir: str
    trials: int
    concurrency: int | None = None
    sandbox: str = "?"
    agent: str = "?"
    choices: dict[str, str] = Field(default_factory=dict)
    """The config group options the run was composed with (`agent: my_agent`, `sandbox:
    docker`, ...): what a person chose, where `agent` is the agent's kind (`command`)."""
    tasks: list[PlannedTask] = Field(default_factory=list)
    cells: int | None = None
    provenance: dict[str, Any] | None = None
    skipped: list[SkippedEntry] = Field(default_factory=list)
    regrade_of: RegradeSource | None = None
    """Set on a regrade's run: the source run whose kept workspaces it graded again."""

    def cell_keys(self) -> list[CellKey]:
        """The planned cells in plan order (task, then trial)."""
        return [CellKey.of(t, i) for t in self.tasks for i in range(self.trials)]

    def task_meta(self) -> dict[str, dict[str, Any]]:
        """task id -> {difficulty, tags}, what `metrics.summarize` groups by."""
        return {t.id: {"difficulty": t.difficulty, "tags": list(t.tags)} for t in self.tasks}

    def task(self, task_id: str) -> PlannedTask | None:
        return next((t for t in self.tasks if t.id == task_id), None)
