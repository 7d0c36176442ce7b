"""Helpers for running agents end to end on real bundled tasks, in-process or via the CLI."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from rich.console import Console

from evalrun.cli.hydra import compose_config
from evalrun.models.records import SampleRecord
from evalrun.run.runner import run
from evalrun.rundir.log import RunLog
from tests.conftest import REPO

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def real_suite(tmp_path: Path) -> Callable[..., Path]:
    """Copy bundled tasks (by id) into a private suite, so tasks other helpers are still writing
    cannot break these tests; the task folders themselves are the real ones."""

    def copy(*task_ids: str) -> Path:
        suite = tmp_path / "suite"
        for task_id in task_ids:
            shutil.copytree(REPO / "tasks" / task_id, suite / task_id)
        return suite

    return copy


@dataclass
class Finished:
    exit_code: int
    records: list[SampleRecord]
    console: str
    run_dir: Path

    @property
    def only(self) -> SampleRecord:
        assert len(self.records) == 1, self.records
        return self.records[0]


def run_eval(suite: Path, run_dir: Path, *overrides: str) -> Finished:
    """`evalrun.run.runner.run` on a composed config, the way the CLI calls it."""
    cfg = compose_config([f"tasks_dir={suite}", f"run_dir={run_dir}", "concurrency=1", *overrides])
    out = io.StringIO()
    code = run(cfg, Console(file=out, width=200))
    return Finished(code, list(RunLog.open(run_dir).records()), out.getvalue(), run_dir)


def evalrun_cli(*args: str, env: dict[str, str] | None = None, cwd: Path = REPO):
    """The `evalrun` command in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        timeout=300,
    )
