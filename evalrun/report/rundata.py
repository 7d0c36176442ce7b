"""What a report shows of one run, read through `evalrun.rundir.log.RunLog` - the only input of
every report.

Reports never touch a live RunPlan: `evalrun report`, `evalrun show` and the sweep page must work
on a run directory copied from a CI machine weeks later. `load_run` opens the run, reads the
records of its planned cells in full (drill-downs show trajectories and outputs) and takes the
summary from summary.json, or computes it from those records when it is missing or stale,
exactly as the runner would have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrun.models.plan import PlanFile
from evalrun.models.records import RunState, SampleRecord, SkippedEntry
from evalrun.models.summary import Summary
from evalrun.rundir.log import RunLog

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
    """Everything a report needs of one run: its log, the records of its planned cells (ordered
    by task then trial) and its summary with the state as the files tell it now."""

    log: RunLog
    records: list[SampleRecord]
    summary: Summary

    @property
    def run_dir(self) -> Path:
        return self.log.run_dir

    @property
    def plan(self) -> PlanFile:
        return self.log.plan

    @property
    def config(self) -> dict[str, Any]:
        return self.log.config

    @property
    def state(self) -> RunState | None:
        return self.summary.state

    @property
    def agent(self) -> str:
        return self.log.agent

    @property
    def skipped(self) -> list[SkippedEntry]:
        """The suite's tasks that did not run: id, kind (cannot load / cannot run), reason."""
        return self.log.plan.skipped

    def prompt(self, task_id: str) -> str | None:
        """The prompt the agent was given for a task (plan.json; None in runs that predate it)."""
        task = self.plan.task(task_id)
        return task.prompt if task is not None else None

    @property
    def started_at(self) -> float | None:
        return min((r.started_at for r in self.records), default=None)

    @property
    def finished_at(self) -> float | None:
        return max((r.finished_at for r in self.records), default=None)


def load_run(run_dir: Path) -> RunFiles:
    """Read a run directory for a report; `UsageError` when it is not one or a file in it is
    unreadable (`RunLog.open`)."""
    log = RunLog.open(run_dir)
    records = log.planned(log.records())
    return RunFiles(log=log, records=records, summary=log.summary(records))
