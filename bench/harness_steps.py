"""Where a sample's harness time goes, step by step, on sandbox=local and sandbox=bwrap.

    .venv/bin/python bench/harness_steps.py [--backends local,bwrap] [--reps 2]
                                            [--tasks-dir evalrun/bundled/tasks]

Runs every task of the suite `--reps` times with the gold agent (agent=oracle), one sample at a
time, through the engine's `run_sample`, with the records and logs written to a throwaway run
directory as a run writes them. The backend and its sandboxes are wrapped in thin timing proxies
that name each call by the step of the sample it belongs to (opening the sandbox, staging the
setup files, the workspace listings, ending the agent's processes, the verifier's hook, clearing
planted paths, injecting the hidden verifier, the answer file, the verifier itself, keeping the
final workspace, closing), and the sample's trajectory.json is written after its record - each
step a run takes by default (`final_workspaces.keep` within the shipped caps).
What no proxy saw - the harness's python between the calls - is "python (engine)".

Printed per step: the median seconds per sample on each backend, side by side; then the median
wall time per sample and the harness's own time per sample: wall minus the setup, agent and
verify phases the record reports (what the issue of a sample's overhead is about). Backends are
built from their shipped config, as `evalrun sandbox=<name>` builds them; a backend that cannot
run here is reported and skipped. Each backend first runs one untimed warm-up sample. Nothing is
asserted on time: the figures are for reading (docs/performance.md, "Per-sample harness time").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from hydra.utils import instantiate

from evalrun.agents.oracle import OracleAgent
from evalrun.cli.hydra import compose_config
from evalrun.errors import UsageError
from evalrun.models.atif import Agent
from evalrun.models.records import CellKey, Outcome, SampleRecord
from evalrun.run import workspace_diff
from evalrun.run.engine import run_sample
from evalrun.run.final_workspace import KeepCaps, WorkspaceKeeper
from evalrun.run.trial import Limits
from evalrun.rundir.store import RunStore
from evalrun.rundir.trajectory import Session
from evalrun.sandbox.base import SANDBOX_PATH, SandboxBackend
from evalrun.tasks.loader import Task, load_suite

REPO = Path(__file__).resolve().parent.parent
STEPS = (
    "open sandbox",
    "stage setup files",
    "setup.sh",
    "listing before agent",
    "agent",
    "end agent (kill, check)",
    "listing after agent",
    "verifier hook",
    "clear planted paths",
    "inject verifier",
    "answer file",
    "verify",
    "keep final workspace",
    "close sandbox",
    "logs + record write",
    "trajectory.json",
    "python (engine)",
)


class Steps:
    """Seconds spent per step in the current sample."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.stage = "setup"  # setup -> agent -> after (end_agent called)

    def add(self, step: str, seconds: float) -> None:
        self.spent[step] += seconds


def _is_listing(cmd: Any) -> bool:
    """The workspace diff's listing: `python3 -I -S -c <script> ...` (evalrun.run.workspace_diff)."""
    return not isinstance(cmd, str) and list(cmd[:3]) == ["python3", "-I", "-S"]


_list = workspace_diff._run


async def _timed_listing(box: Any, *args: str) -> dict[str, Any]:
    """The workspace listing, wherever it runs (in the sandbox, or here on a host folder)."""
    steps = box._steps
    step = "listing after agent" if steps.stage == "after" else "listing before agent"
    start = time.perf_counter()
    try:
        return await _list(box, *args)
    finally:
        steps.add(step, time.perf_counter() - start)


workspace_diff._run = _timed_listing


class TimedSandbox:
    """Delegates to a real sandbox, charging each call's time to its step."""

    def __init__(self, inner: Any, steps: Steps):
        self._inner = inner
        self._steps = steps

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def _timed(self, step: str, call: Any) -> Any:
        start = time.perf_counter()
        try:
            return await call
        finally:
            self._steps.add(step, time.perf_counter() - start)

    async def exec(self, cmd: Any, **kwargs: Any) -> Any:
        stage = self._steps.stage
        step = {"setup": "setup.sh", "agent": "agent", "after": "verify", "keep": "keep"}[stage]
        if step in ("agent", "keep") or _is_listing(
            cmd
        ):  # a listing is timed whole, by `_timed_listing`
            return await self._inner.exec(cmd, **kwargs)  # the agent's own time, counted whole
        return await self._timed(step, self._inner.exec(cmd, **kwargs))

    async def put(self, host_dir: Path, path: str = ".") -> None:
        stage = self._steps.stage
        if stage == "agent":
            return await self._inner.put(host_dir, path)
        step = "stage setup files" if stage == "setup" else "inject verifier"
        return await self._timed(step, self._inner.put(host_dir, path))

    async def write_file(self, path: str, data: bytes | str) -> None:
        if self._steps.stage != "after":
            return await self._inner.write_file(path, data)
        step = "verifier hook" if path.endswith("sitecustomize.py") else "answer file"
        return await self._timed(step, self._inner.write_file(path, data))

    async def clear(self, paths: Sequence[str]) -> list[str]:
        return await self._timed("clear planted paths", self._inner.clear(paths))

    async def end_agent(self) -> None:
        self._steps.stage = "after"
        return await self._timed("end agent (kill, check)", self._inner.end_agent())

    async def begin_agent(self) -> None:  # a multi-step task's next step
        self._steps.stage = "setup"
        return await self._inner.begin_agent()


class TimedAgent:
    """The oracle agent, its whole run charged to "agent"."""

    name = "oracle"

    def __init__(self, steps: Steps):
        self._inner = OracleAgent()
        self._steps = steps
        self.prepared = self._inner.prepared

    def preflight(self) -> None:
        self._inner.preflight()

    async def run(self, task: Task, sandbox: Any) -> Any:
        self._steps.stage = "agent"
        start = time.perf_counter()
        try:
            return await self._inner.run(task, sandbox)
        finally:
            self._steps.add("agent", time.perf_counter() - start)


class TimedKeeper:
    """The run's workspace keeper, its whole `keep` charged to "keep final workspace"."""

    def __init__(self, inner: WorkspaceKeeper, steps: Steps):
        self._inner = inner
        self._steps = steps

    async def keep(self, box: Any, key: CellKey, deadline_s: float) -> Any:
        stage, self._steps.stage = self._steps.stage, "keep"
        start = time.perf_counter()
        try:
            return await self._inner.keep(box, key, deadline_s)
        finally:
            self._steps.add("keep final workspace", time.perf_counter() - start)
            self._steps.stage = stage


class TimedBackend:
    """Delegates to a real backend; its sandboxes come wrapped, opening and closing timed."""

    def __init__(self, inner: SandboxBackend, steps: Steps):
        self._inner = inner
        self._steps = steps

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @asynccontextmanager
    async def open(self, label: str, *spec: Any) -> AsyncIterator[TimedSandbox]:
        start = time.perf_counter()
        opened = self._inner.open(label, *spec)
        box = await opened.__aenter__()
        self._steps.add("open sandbox", time.perf_counter() - start)
        try:
            yield TimedSandbox(box, self._steps)
        finally:
            start = time.perf_counter()
            await opened.__aexit__(None, None, None)
            self._steps.add("close sandbox", time.perf_counter() - start)


def make_backend(name: str) -> tuple[SandboxBackend, KeepCaps | None]:
    """The backend as `evalrun sandbox=<name>` builds it, and the final-workspace caps a run has."""
    cfg = compose_config([f"sandbox={name}"])
    backend = instantiate(cfg.sandbox, keep_workspaces=False)
    backend.preflight()
    return backend, KeepCaps.of(cfg.final_workspaces)


def phases(rec: SampleRecord) -> float:
    return (rec.phases.setup or 0.0) + (rec.phases.agent or 0.0) + (rec.phases.verify or 0.0)


async def measure(
    backend: SandboxBackend, caps: KeepCaps | None, tasks: list[Task], reps: int, store: RunStore
):
    """Per step, each sample's seconds; and each sample's wall and harness-own seconds."""
    per_step: dict[str, list[float]] = defaultdict(list)
    walls, own = [], []
    limits = Limits(max_retries=0)
    keeper = None if caps is None else WorkspaceKeeper(store.run_dir, caps)
    session = Session(Agent(name="oracle", version="bench"), {t.id: t.spec.prompt for t in tasks})
    await run_sample(tasks[0], 0, OracleAgent(), backend, limits, run_id="warm-up")
    for trial in range(reps):
        for task in tasks:
            steps = Steps()
            timed = TimedBackend(backend, steps)
            kept = None if keeper is None else TimedKeeper(keeper, steps)

            def log(key: CellKey, name: str, text: str, steps: Steps = steps) -> None:
                start = time.perf_counter()
                store.write_log(key, name, text)
                steps.add("logs + record write", time.perf_counter() - start)

            start = time.perf_counter()
            agent = TimedAgent(steps)
            rec = await run_sample(task, trial, agent, timed, limits, "bench", log, keeper=kept)
            began = time.perf_counter()
            written = store.append(rec)
            steps.add("logs + record write", time.perf_counter() - began)
            began = time.perf_counter()
            store.write_trajectory(written, session)
            steps.add("trajectory.json", time.perf_counter() - began)
            wall = time.perf_counter() - start
            if rec.outcome is not Outcome.passed:
                raise SystemExit(f"{backend.name}: gold failed on {task.id}: {rec.reason}")
            steps.add("python (engine)", wall - sum(steps.spent.values()))
            for step in STEPS:
                per_step[step].append(steps.spent.get(step, 0.0))
            walls.append(wall)
            own.append(wall - phases(rec))
    return per_step, walls, own


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="local,bwrap")
    parser.add_argument("--tasks-dir", type=Path, default=REPO / "evalrun" / "bundled" / "tasks")
    parser.add_argument("--reps", type=int, default=2, help="samples per task per backend")
    parser.add_argument("--host-path", action="store_true", help="local keeps your PATH")
    args = parser.parse_args()
    if not args.host_path:  # like with like: local runs the same system tools as bwrap
        os.environ["PATH"] = SANDBOX_PATH

    tasks = load_suite(args.tasks_dir)
    print(f"{len(tasks)} tasks x {args.reps} reps, gold agent, one sample at a time, "
          f"{os.cpu_count()} cores\n")  # fmt: skip
    results: dict[str, tuple[dict[str, list[float]], list[float], list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="evalrun-bench-") as scratch:
        for name in args.backends.split(","):
            try:
                backend, caps = make_backend(name)
            except UsageError as exc:
                print(f"{name}: skipped - {exc}\n")
                continue
            store = RunStore(Path(scratch) / name)
            store.create()
            try:
                results[name] = asyncio.run(measure(backend, caps, tasks, args.reps, store))
            finally:
                store.close()
    if not results:
        return
    names = list(results)
    print(f"{'median seconds per sample':<28}" + "".join(f"{n:>10}" for n in names))
    for step in STEPS:
        cells = "".join(f"{statistics.median(results[n][0][step]):>10.4f}" for n in names)
        print(f"  {step:<26}{cells}")
    print(f"{'wall':<28}" + "".join(f"{statistics.median(results[n][1]):>10.4f}" for n in names))
    line = "".join(f"{statistics.median(results[n][2]):>10.4f}" for n in names)
    print(f"{'harness (wall - phases)':<28}{line}")


if __name__ == "__main__":
    main()
