"""Per-sample cost of each sandbox backend on the same tasks with the oracle agent.

    .venv/bin/python bench/sandbox_overhead.py [--backends local,bwrap,docker] [--reps 2]
                                               [--tasks-dir tasks] [--concurrency 1]

Every backend runs the same gold samples (`run_sample` with agent=oracle: open a sandbox, copy
setup/ and run setup.sh, overlay solution/, grade with verify.sh, close) one at a time by default,
so the figures are latency per sample, not throughput. Backends are built from their shipped
config (`conf/sandbox/<name>.yaml`), exactly as `evalrun sandbox=<name>` builds them. Each backend
runs one untimed warm-up sample first (page cache, image layers, imports).

Printed per backend: mean and median seconds per sample, the ratio of the mean to local's, and
how that time splits into sandbox start+stop (what is left outside setup/agent/verify) and the
three phases. A backend that cannot run here (no bubblewrap, no engine) is reported and skipped.

Like with like: `local` runs the host's tools from PATH, the others their own
(`/usr/bin/python3` and friends). A pyenv shim first on PATH costs ~0.45 s per `python3` call,
which would be charged to local; so the bench runs with the sandboxes' PATH unless --host-path.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from hydra.utils import instantiate

from evalrun.agents.oracle import OracleAgent
from evalrun.cli.hydra import compose_config
from evalrun.errors import UsageError
from evalrun.models.records import Outcome, SampleRecord
from evalrun.run.engine import run_sample
from evalrun.run.trial import Limits
from evalrun.sandbox.base import SandboxBackend
from evalrun.tasks.loader import Task, load_suite

REPO = Path(__file__).resolve().parent.parent
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass
class Timing:
    backend: str
    totals: list[float] = field(default_factory=list)
    records: list[SampleRecord] = field(default_factory=list)

    def phase(self, name: str) -> float:
        return statistics.fmean(getattr(r.phases, name) or 0.0 for r in self.records)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.totals)

    @property
    def start_stop(self) -> float:
        return self.mean - sum(self.phase(p) for p in ("setup", "agent", "verify"))


def make_backend(name: str) -> SandboxBackend:
    cfg = compose_config([f"sandbox={name}"])
    backend = instantiate(cfg.sandbox, keep_workspaces=False)
    backend.preflight()
    return backend


async def measure(backend: SandboxBackend, tasks: list[Task], reps: int, concurrency: int):
    agent, limits = OracleAgent(), Limits(max_retries=0)
    timing = Timing(backend.name)
    gate = asyncio.Semaphore(concurrency)

    async def one(task: Task, trial: int) -> None:
        async with gate:
            start = time.perf_counter()
            rec = await run_sample(task, trial, agent, backend, limits, run_id="bench")
            timing.totals.append(time.perf_counter() - start)
        if rec.outcome is not Outcome.passed:
            raise SystemExit(f"{backend.name}: gold failed on {task.id}: {rec.reason}")
        timing.records.append(rec)

    await run_sample(tasks[0], 0, agent, backend, limits, run_id="warm-up")
    started = time.perf_counter()
    await asyncio.gather(*(one(t, i) for i in range(reps) for t in tasks))
    return timing, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="local,bwrap,docker")
    parser.add_argument("--tasks-dir", type=Path, default=REPO / "tasks")
    parser.add_argument("--reps", type=int, default=2, help="samples per task per backend")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--host-path", action="store_true", help="local keeps your PATH")
    args = parser.parse_args()
    if not args.host_path:
        os.environ["PATH"] = SANDBOX_PATH

    tasks = load_suite(args.tasks_dir)
    samples = len(tasks) * args.reps
    print(f"{len(tasks)} tasks x {args.reps} reps = {samples} gold samples per backend, "
          f"concurrency {args.concurrency}\n")  # fmt: skip
    results: list[tuple[Timing, float]] = []
    for name in args.backends.split(","):
        try:
            backend = make_backend(name)
        except UsageError as exc:
            print(f"{name}: skipped - {exc}\n")
            continue
        results.append(asyncio.run(measure(backend, tasks, args.reps, args.concurrency)))
    if not results:
        return
    base = next((t.mean for t, _ in results if t.backend == "local"), results[0][0].mean)
    head = f"{'backend':<8} {'s/sample':>9} {'median':>8} {'x local':>8} {'start+stop':>11}"
    print(f"{head} {'setup':>7} {'agent':>7} {'verify':>7} {'wall':>7}")
    for timing, wall in results:
        print(
            f"{timing.backend:<8} {timing.mean:>9.3f} {statistics.median(timing.totals):>8.3f} "
            f"{timing.mean / base:>8.2f} {timing.start_stop:>11.3f} {timing.phase('setup'):>7.3f} "
            f"{timing.phase('agent'):>7.3f} {timing.phase('verify'):>7.3f} {wall:>6.1f}s"
        )


if __name__ == "__main__":
    main()
