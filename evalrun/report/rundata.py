"""A finished (or interrupted) run read back from its directory - the only input of every report.

Reports never touch a live RunPlan: `evalrun report`, `evalrun show` and `evalrun ls` must work on a
run directory copied from a CI machine weeks later. `load_run` reads config.yaml, plan.json,
samples.jsonl and summary.json; when summary.json is missing (a run killed before it finished) the
summary is computed from the recorded samples, exactly as the runner would have.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import ValidationError

from evalrun.errors import UsageError
from evalrun.metrics import Summary, summarize
from evalrun.records import SampleDigest, SampleRecord
from evalrun.store import (
    CONFIG_FILE,
    PLAN_FILE,
    SUMMARY_FILE,
    RunState,
    RunStore,
    planned_cells,
    run_state,
)

HTML_FILE = "report.html"
JUNIT_FILE = "junit.xml"

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def clean_text(text: str | None) -> str:
    """Agent and verify output as plain text: ANSI colour codes and characters XML 1.0 forbids
    (NUL, other C0 controls) removed, so JUnit stays parseable and HTML stays readable."""
    return _NOT_XML.sub("", _ANSI.sub("", text or ""))


@dataclass(frozen=True)
class RunFiles:
    """Everything a report needs, as read from one run directory."""

    run_dir: Path
    summary: Summary
    records: list[SampleRecord]  # the plan's cells only, ordered by task then trial
    plan: dict[str, Any]
    config: dict[str, Any]
    config_text: str
    overrides: list[str] = field(default_factory=list)
    state: RunState | None = None  # complete, or partial N/M: from the files, read now

    @property
    def agent(self) -> str:
        """`coder (gpt-4o-mini)` for agents that call a model, else the agent's name."""
        name = str(self.plan.get("agent", "?"))
        agent_cfg = self.config.get("agent")
        provider = agent_cfg.get("provider") if isinstance(agent_cfg, dict) else None
        model = provider.get("model") if isinstance(provider, dict) else None
        return f"{name} ({model})" if model else name

    @property
    def skipped(self) -> list[dict[str, str]]:
        """The suite's tasks that did not run: {id, kind (cannot load / cannot run), reason}."""
        return [s for s in self.plan.get("skipped", []) if isinstance(s, dict)]

    def task_fields(self, task_id: str) -> dict[str, Any]:
        """What a task's file says that evalrun does not use (kept in plan.json), by dotted key."""
        for task in self.plan.get("tasks", []):
            if isinstance(task, dict) and task.get("id") == task_id:
                fields = task.get("fields")
                return fields if isinstance(fields, dict) else {}
        return {}

    @property
    def started_at(self) -> float | None:
        return min((r.started_at for r in self.records), default=None)

    @property
    def finished_at(self) -> float | None:
        return max((r.finished_at for r in self.records), default=None)


def is_run_dir(path: Path) -> bool:
    """A run directory holds at least the config and the plan the runner writes before it starts."""
    return (path / CONFIG_FILE).is_file() and (path / PLAN_FILE).is_file()


def sweep_jobs(path: Path) -> list[Path]:
    """The job run directories of a Hydra multirun folder (numbered subfolders), in job order."""
    if not path.is_dir():
        return []
    jobs = [p for p in path.iterdir() if p.name.isdigit() and is_run_dir(p)]
    return sorted(jobs, key=lambda p: int(p.name))


def require_run_dir(path: Path) -> Path:
    if not path.is_dir():
        raise UsageError(f"{path}: no such directory (expected a run directory)")
    if not is_run_dir(path):
        raise UsageError(
            f"{path} is not a run directory: expected {CONFIG_FILE} and {PLAN_FILE} in it "
            "(written by `evalrun` when a run starts)"
        )
    return path


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not readable JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a JSON object")
    return data


R = TypeVar("R", SampleRecord, SampleDigest)


def planned_records(plan: dict[str, Any], records: list[R]) -> list[R]:
    """The records of the plan's cells (a task at its planned fingerprint, trial < trials), as
    the runner's summary counts them; the latest record wins if a cell was recorded twice."""
    fingerprints = {t["id"]: t.get("fingerprint") for t in plan.get("tasks", [])}
    trials = int(plan.get("trials", 0))
    order = {task_id: i for i, task_id in enumerate(fingerprints)}
    cells: dict[tuple[str, int], R] = {}
    for rec in records:
        if fingerprints.get(rec.task_id, object()) == rec.fingerprint and rec.trial < trials:
            cells[(rec.task_id, rec.trial)] = rec
    return sorted(cells.values(), key=lambda r: (order[r.task_id], r.trial))


def load_summary(
    run_dir: Path, plan: dict[str, Any], records: list[SampleRecord] | list[SampleDigest]
) -> Summary:
    """summary.json with the run's state as the files tell it now; recomputed from the records
    when summary.json is missing or stale (a resume recorded more samples since it was written)."""
    path = run_dir / SUMMARY_FILE
    state = run_state(planned_cells(plan), [r.key for r in records])
    if path.is_file():
        try:
            saved = Summary.model_validate(_read_json(path))
        except ValidationError as exc:
            raise UsageError(f"{path}: does not match the summary schema: {exc}") from exc
        if saved.samples == len(records):
            return saved.model_copy(update={"state": state})
    meta = {
        t["id"]: {"difficulty": t.get("difficulty", "unknown"), "tags": t.get("tags", [])}
        for t in plan.get("tasks", [])
    }
    run_id = str(plan.get("run_id", run_dir.name))
    summary = summarize(records, meta, run_id=run_id, trials=int(plan.get("trials", 1)))
    return summary.model_copy(update={"state": state})


def read_summary(run_dir: str | Path, role: str) -> Summary:
    """The summary of a run that has ended (its summary.json exists), with its state, both as
    the files tell them now (see `load_summary`). `UsageError` naming `role` and the path when
    a file is missing or unreadable. Reads records as digests: cheap on large runs."""
    run_dir = Path(run_dir).expanduser()
    path = run_dir / SUMMARY_FILE
    if not path.is_file():
        raise UsageError(f"{role}: {path} not found (expected the directory of a run that ended)")
    try:
        plan = _read_json(run_dir / PLAN_FILE)
        records = planned_records(plan, RunStore(run_dir).digests())
        return load_summary(run_dir, plan, records)
    except UsageError as exc:
        raise UsageError(f"{role}: {exc}") from exc


def load_run(run_dir: Path) -> RunFiles:
    """Read a run directory; `UsageError` when it is not one or a file in it is unreadable."""
    run_dir = require_run_dir(Path(run_dir))
    plan = _read_json(run_dir / PLAN_FILE)
    config_text = (run_dir / CONFIG_FILE).read_text(encoding="utf-8")
    try:
        config = yaml.safe_load(config_text) or {}
    except yaml.YAMLError as exc:
        raise UsageError(f"{run_dir / CONFIG_FILE}: not readable YAML ({exc})") from exc
    records = planned_records(plan, RunStore(run_dir).records())
    summary = load_summary(run_dir, plan, records)
    return RunFiles(
        run_dir=run_dir,
        summary=summary,
        records=records,
        plan=plan,
        config=config if isinstance(config, dict) else {},
        config_text=config_text,
        overrides=RunStore(run_dir).read_overrides(),
        state=summary.state,
    )
