"""Which Opik objects a run maps to, and what its run directory remembers about them.

`OpikDestination` says where to send (project, dataset, server); `TaskItem` is a task as a
dataset item; `OpikLink` is `<run-dir>/opik.json`: the experiment's id, name, project and
dataset, its `experiment_config` and the task prompts - written before the first request, so the
live tracker, a resumed run and any later `evalrun push` all address the same experiment and
derive the same trace ids. Nothing here talks to Opik or imports its SDK.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrun.config.schema import OpikTrackerConf
from evalrun.errors import UsageError
from evalrun.integrations.opik.traces import stable_uuid7
from evalrun.models.plan import TasksSource
from evalrun.rundir.provenance import reproduction_info
from evalrun.tasks.loader import Task

OPIK_FILE = "opik.json"


@dataclass(frozen=True)
class OpikDestination:
    """Where to send. `host`/`workspace` None: the SDK's own settings (OPIK_URL_OVERRIDE,
    OPIK_WORKSPACE, ~/.opik.config); the API key is always the SDK's (OPIK_API_KEY)."""

    project: str = OpikTrackerConf.project  # defaults: their home is the tracker schema
    dataset: str | None = None  # None: evalrun-<suite>-v1
    host: str | None = None
    workspace: str | None = None
    flush_timeout_s: int = OpikTrackerConf.flush_timeout_s
    probe_timeout_s: float = OpikTrackerConf.probe_timeout_s

    @classmethod
    def of(cls, tracker: Any) -> OpikDestination:
        """From a composed `tracker=opik` config node."""
        return cls(
            project=tracker.project,
            dataset=tracker.dataset or None,
            host=tracker.host or None,
            workspace=tracker.workspace or None,
            flush_timeout_s=tracker.flush_timeout_s,
            probe_timeout_s=tracker.probe_timeout_s,
        )

    def dataset_for(self, tasks_dir: Path) -> str:
        return self.dataset or f"evalrun-{Path(tasks_dir).name}-v1"


@dataclass(frozen=True)
class TaskItem:
    """One task as a dataset item."""

    task_id: str
    difficulty: str
    tags: tuple[str, ...]
    fingerprint: str
    prompt: str | None

    def data(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "prompt": self.prompt,
            "difficulty": self.difficulty,
            "tags": list(self.tags),
            "fingerprint": self.fingerprint,
        }


def task_item(task: Task) -> TaskItem:
    return TaskItem(
        task_id=task.id,
        difficulty=task.spec.difficulty.value,
        tags=tuple(task.spec.tags),
        fingerprint=task.fingerprint,
        prompt=task.spec.prompt,
    )


@dataclass
class OpikLink:
    """What a run directory remembers about its experiment (`opik.json`): written before the
    first request, so a push after an outage reuses the same experiment and trace ids."""

    experiment_id: str
    experiment_name: str
    project: str
    dataset: str
    experiment_config: dict[str, Any]
    prompts: dict[str, str | None]

    def save(self, run_dir: Path) -> None:
        path = Path(run_dir) / OPIK_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.__dict__, indent=2, default=str) + "\n")
        os.replace(tmp, path)

    @classmethod
    def load(cls, run_dir: Path) -> OpikLink | None:
        path = Path(run_dir) / OPIK_FILE
        if not path.is_file():
            return None
        try:
            return cls(**json.loads(path.read_text()))
        except (ValueError, TypeError) as exc:
            raise UsageError(f"{path}: not a valid evalrun Opik link file: {exc}") from exc


def new_experiment_id() -> str:
    """A fresh UUIDv7 (time-ordered, as Opik wants), allocated once per run."""
    return stable_uuid7(int(time.time() * 1000), str(uuid.uuid4()))


def experiment_name(run_dir: Path) -> str:
    """The run directory's name; a multirun job's (`<sweep>/<n>`) keeps its sweep's name too."""
    run_dir = Path(run_dir)
    return f"{run_dir.parent.name}/{run_dir.name}" if run_dir.name.isdigit() else run_dir.name


def new_link(
    *,
    run_dir: Path,
    config: Mapping[str, Any],
    tasks_dir: Path,
    tasks: Iterable[TaskItem],
    cells: int,
    dest: OpikDestination,
    recorded_at: str,
    source: TasksSource | None = None,
) -> OpikLink:
    """A fresh link for a run, saved as its opik.json: a new experiment id, and as
    `experiment_config` the redacted resolved config plus `reproduction` (git shas, versions,
    fingerprints, cell count, and for a suite given by reference its `tasks_source`: URL,
    commit, sub-folder, registry dataset). `recorded_at` says when that was collected: `run`,
    or `push` for a run pushed later."""
    tasks = list(tasks)
    reproduction = {
        **reproduction_info(tasks_dir, source),
        "tasks_dir": str(tasks_dir),
        "task_fingerprints": {t.task_id: t.fingerprint for t in tasks},
        "cells": cells,
        "recorded_at": recorded_at,
    }
    link = OpikLink(
        experiment_id=new_experiment_id(),
        experiment_name=experiment_name(run_dir),
        project=dest.project,
        dataset=dest.dataset_for(tasks_dir),
        experiment_config={**config, "reproduction": reproduction},
        prompts={t.task_id: t.prompt for t in tasks},
    )
    link.save(run_dir)
    return link
