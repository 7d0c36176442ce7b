"""What keeping final workspaces costs, and what a regrade costs against running again.

    .venv/bin/python bench/final_workspaces.py [--backends local,bwrap,docker] [--reps 2]
                                               [--tasks-dir evalrun/bundled/tasks]

1. Keeping: every task of the suite, `--reps` times, with the gold agent (agent=oracle), one
   sample at a time through the engine's `run_sample` with a `WorkspaceKeeper` whose `keep` is
   timed. Printed per backend: the milliseconds `keep` took per sample (median, mean, max) and
   the archive's bytes (median, mean, max, total).
2. Regrade against a run: `evalrun sandbox=<b> tasks_dir=<suite>` and then `evalrun regrade` of
   that run, each a fresh process at the shipped concurrency; printed: wall seconds per sample
   of each (process start-up included, about a second each).

Backends are built from their shipped config, as `evalrun sandbox=<name>` builds them; one that
cannot run here is reported and skipped. Nothing is asserted: the figures are for reading.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hydra.utils import instantiate

from evalrun.agents.oracle import OracleAgent
from evalrun.cli.hydra import compose_config
from evalrun.errors import UsageError
from evalrun.models.records import CellKey, KeptWorkspace
from evalrun.run.engine import run_sample
from evalrun.run.final_workspace import KeepCaps, WorkspaceKeeper
from evalrun.run.trial import Limits
from evalrun.sandbox.base import Sandbox, SandboxBackend
from evalrun.tasks.loader import load_suite

REPO = Path(__file__).resolve().parent.parent
CAPS = KeepCaps(sample_bytes=20 * 1024 * 1024, run_bytes=1024 * 1024 * 1024)


class TimedKeeper(WorkspaceKeeper):
    """A keeper that notes how long each `keep` took and how large each archive was."""

    def __init__(self, run_dir: Path):
        super().__init__(run_dir, CAPS)
        self.ms: list[float] = []
        self.sizes: list[int] = []

    async def keep(self, box: Sandbox, key: CellKey, deadline_s: float) -> KeptWorkspace:
        clock = time.perf_counter()
        kept = await super().keep(box, key, deadline_s)
        self.ms.append((time.perf_counter() - clock) * 1000)
        self.sizes.append(kept.bytes or 0)
        return kept


def backend_for(name: str) -> SandboxBackend:
    backend: SandboxBackend = instantiate(
        compose_config([f"sandbox={name}"]).sandbox, keep_workspaces=False
    )
    backend.preflight()
    return backend


async def keeping(backend: SandboxBackend, tasks_dir: Path, reps: int) -> TimedKeeper:
    tasks = load_suite(tasks_dir)
    with tempfile.TemporaryDirectory(prefix="bench-keep-") as run_dir:
        keeper = TimedKeeper(Path(run_dir))
        for rep in range(reps):
            for task in tasks:
                await run_sample(task, rep, OracleAgent(), backend, Limits(), "bench", None,
                                 None, keeper)  # fmt: skip
        return keeper


def timed_cli(*args: str) -> float:
    clock = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    if done.returncode != 0:
        raise SystemExit(f"evalrun {' '.join(args)} exited {done.returncode}:\n{done.stdout}")
    return time.perf_counter() - clock


def stats(values: list[float]) -> str:
    return (
        f"median {statistics.median(values):,.1f}  mean {statistics.fmean(values):,.1f}  "
        f"max {max(values):,.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="local,bwrap,docker")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--tasks-dir", type=Path, default=REPO / "evalrun/bundled/tasks")
    options = parser.parse_args()
    count = len(load_suite(options.tasks_dir))
    for name in options.backends.split(","):
        try:
            backend = backend_for(name)
        except UsageError as exc:
            print(f"{name}: skipped ({exc})")
            continue
        keeper = asyncio.run(keeping(backend, options.tasks_dir, options.reps))
        print(f"{name}: keep, {len(keeper.ms)} gold samples")
        print(f"  ms per sample     {stats(keeper.ms)}")
        sizes = [float(s) for s in keeper.sizes]
        print(f"  bytes per sample  {stats(sizes)}  total {sum(keeper.sizes):,}")
        with tempfile.TemporaryDirectory(prefix="bench-regrade-") as folder:
            source, regraded = Path(folder) / "source", Path(folder) / "regraded"
            ran = timed_cli(f"sandbox={name}", f"tasks_dir={options.tasks_dir}",
                            f"run_dir={source}")  # fmt: skip
            again = timed_cli("regrade", str(source), f"run_dir={regraded}")
        print(
            f"  s per sample      run {ran / count:.2f}  regrade {again / count:.2f}  "
            f"({count} tasks, wall time of each command over its samples)"
        )


if __name__ == "__main__":
    main()
