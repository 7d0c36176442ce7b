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


class Checkout(BaseModel):
    """One git checkout a suite was read from: the URL as fetched, the ref asked for (a tag,
    branch or commit; None: the remote's default branch), the commit it resolved to, and the
    sub-folder (`#sub`) the tasks sit in."""

    url: str
    commit: str
    ref: str | None = None
    subdir: str = ""


class TasksSource(BaseModel):
    """Where a suite given by reference came from (`tasks_dir=git+<url>@<ref>#<sub>` or a
    registry's `name@version`): recorded in plan.json's provenance, the Opik experiment config
    and the report, and compared by `evalrun diff`. None for a folder given by path."""

    reference: str
    """`tasks_dir` as the user wrote it."""
    checkouts: list[Checkout]
    registry: str | None = None
    """`name@version` of a registry dataset (None: a git reference)."""
    registry_file: str | None = None
    """The registry file (path or URL) the dataset was read from."""

    def facts(self) -> dict[str, str]:
        """What identifies the suite's content, one line each: `registry` and, per checkout,
        `commit <url>[#sub]` (what `evalrun diff` and the report show)."""
        out = {"registry": self.registry} if self.registry else {}
        for checkout in self.checkouts:
            where = checkout.url + (f"#{checkout.subdir}" if checkout.subdir else "")
            out[f"commit {where}"] = checkout.commit
        return out

    def describe(self) -> str:
        """One line for a report header: the reference and what it resolved to."""
        commits = ", ".join(c.commit[:12] for c in self.checkouts)
        return f"{self.reference} (commit {commits})"


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
    """How to reproduce the run (`evalrun.rundir.provenance.reproduction_info`); its
    `tasks_source` is a `TasksSource` for a suite given by reference."""
    skipped: list[SkippedEntry] = Field(default_factory=list)
    regrade_of: RegradeSource | None = None
    """Set on a regrade's run: the source run whose kept workspaces it graded again."""

    def cell_keys(self) -> list[CellKey]:
        """The planned cells in plan order (task, then trial)."""
        return [CellKey.of(t, i) for t in self.tasks for i in range(self.trials)]

    def task_meta(self) -> dict[str, dict[str, Any]]:
        """task id -> {difficulty, tags}, what `metrics.summarize` groups by."""
        return {t.id: {"difficulty": t.difficulty, "tags": list(t.tags)} for t in self.tasks}

    @property
    def tasks_source(self) -> TasksSource | None:
        """The suite's reference as resolved (None: a folder given by path, or an older run)."""
        found = (self.provenance or {}).get("tasks_source")
        return TasksSource.model_validate(found) if found else None

    def task(self, task_id: str) -> PlannedTask | None:
        return next((t for t in self.tasks if t.id == task_id), None)
