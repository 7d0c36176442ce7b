"""Real runs for the view's tests, made once per session by the real runner: the bundled suite
(two tasks via `ids=`) with agent=oracle and agent=noop on sandbox=local and agent=oracle on
sandbox=bwrap, and a hostile suite whose task id and failure reason carry markup (the run data
comes from the agents under test, so the view must render it inert). Named so that `ls` order,
newest first, is hostile, bwrap, noop, oracle."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
import yaml

from tests.cli.test_main import evalrun
from tests.conftest import require_engine

IDS = "ids=[001-fizzbuzz-off-by-one,002-factorial-missing-return]"
HOSTILE_TASK = "001-<script>window.pwned=1<"  # a folder name cannot hold a slash
HOSTILE_REASON = "FAIL: </pre></script><script>window.pwned=2</script><img src=x onerror=alert(3)>"
HOSTILE_RUN = "<img src=x onerror=window.pwned=4>"
RUNS = ("20260101-100000-oracle", "20260101-110000-noop", "20260101-120000-bwrap", HOSTILE_RUN)


def real_run(run_dir: Path, *overrides: str) -> Path:
    """A run as a user starts one: the `evalrun` command."""
    proc = evalrun(f"run_dir='{run_dir}'", "concurrency=2", "max_retries=0", *overrides)
    assert (run_dir / "summary.json").is_file(), proc.stderr
    return run_dir


def hostile_suite(folder: Path) -> Path:
    task = folder / HOSTILE_TASK
    for rel, text in {
        "task.yaml": yaml.safe_dump(
            {"id": HOSTILE_TASK, "prompt": "<b>hi</b>", "max_steps": 3, "difficulty": "easy"}
        ),
        "setup/README.md": "nothing\n",
        "verify/verify.sh": f"echo '{HOSTILE_REASON}'; exit 1\n",
        "solution/answer.txt": "42",
    }.items():
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_text(text)
    return folder


def age(run_dir: Path, hours_ago: float) -> None:
    """Put a run at a point in the past (its files' times), so the runs have a fixed order."""
    stamp = time.time() - hours_ago * 3600
    for path in [run_dir, *run_dir.rglob("*")]:
        os.utime(path, (stamp, stamp), follow_symlinks=False)


@pytest.fixture(scope="session")
def runs_root(tmp_path_factory) -> Path:
    require_engine(shutil.which("bwrap") is not None, "bubblewrap (apt-get install bubblewrap)")
    base = tmp_path_factory.mktemp("view")
    root = base / "runs"
    oracle, noop, bwrap, hostile = (root / name for name in RUNS)
    real_run(oracle, "agent=oracle", "sandbox=local", IDS)
    real_run(noop, "agent=noop", "sandbox=local", IDS)
    real_run(bwrap, "agent=oracle", "sandbox=bwrap", IDS)
    suite = hostile_suite(base / "hostile-suite")
    real_run(hostile, f"tasks_dir={suite}", "agent=oracle", "sandbox=local")
    for hours, run_dir in zip((4, 3, 2, 1), (oracle, noop, bwrap, hostile), strict=True):
        age(run_dir, hours)
    return root


@pytest.fixture
def runs(runs_root, tmp_path) -> Path:
    """A copy of the session's runs that a test may change."""
    copy = tmp_path / "runs"
    shutil.copytree(runs_root, copy, symlinks=True)
    return copy
