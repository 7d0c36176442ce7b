"""Time and peak memory to summarise a 10,000-sample run directory (500 tasks x 20 trials).

    .venv/bin/python bench/summarize_10k.py [--tasks 500 --trials 20]

Writes a synthetic samples.jsonl with realistic records (trajectory, verify output tails), then
reads it back and summarises it exactly as `evalrun` does at the end of a run
(`RunLog.summarize`: the records parsed as digests, then `metrics.summarize`).
"""

from __future__ import annotations

import argparse
import random
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path

from evalrun.models.plan import PlanFile, PlannedTask, RunKind
from evalrun.models.records import AgentResult, Outcome, Phases, SampleRecord, ToolCall, Usage
from evalrun.rundir.log import RunLog
from evalrun.rundir.store import RunStore


def write_run(run_dir: Path, tasks: int, trials: int) -> dict[str, dict]:
    rng = random.Random(7)
    store = RunStore(run_dir)
    store.create()
    meta = {}
    with (run_dir / "samples.jsonl").open("w") as handle:
        for t in range(tasks):
            task_id = f"{t:04d}-task"
            meta[task_id] = {
                "difficulty": rng.choice(["easy", "medium", "hard"]),
                "tags": rng.sample(["python", "git", "sql", "cli", "data"], 2),
            }
            p = rng.random()
            for trial in range(trials):
                roll = rng.random()
                outcome = (
                    Outcome.error
                    if roll < 0.02
                    else (Outcome.passed if roll < p else Outcome.failed)
                )
                rec = SampleRecord(
                    run_id="bench",
                    task_id=task_id,
                    fingerprint="f" * 64,
                    trial=trial,
                    outcome=outcome,
                    reason=None if outcome is Outcome.passed else "FAIL: x",
                    verify_output="FAIL: expected 3 got 4\n" * 20,
                    phases=Phases(setup=0.01, agent=rng.uniform(5, 90), verify=rng.uniform(0.1, 2)),
                    agent=AgentResult(
                        output="done " * 50,
                        trajectory=[
                            ToolCall(
                                name="bash", args={"command": "ls"}, result="a b c", duration_s=0.1
                            )
                        ]
                        * 12,
                        usage=Usage(
                            requests=12,
                            input_tokens=40_000,
                            output_tokens=2_000,
                            cost_usd=rng.uniform(0.01, 0.2),
                        ),
                    ),
                    started_at=0.0,
                    finished_at=1.0,
                )
                handle.write(rec.model_dump_json() + "\n")
    store.write_config({})
    planned = [
        PlannedTask(id=task_id, fingerprint="f" * 64, difficulty=m["difficulty"], tags=m["tags"])
        for task_id, m in meta.items()
    ]
    store.write_plan(
        PlanFile(
            schema_version=1,
            kind=RunKind.tasks,
            run_id="bench",
            tasks_dir="tasks",
            trials=trials,
            tasks=planned,
        )
    )
    return meta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--trials", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        write_run(run_dir, args.tasks, args.trials)
        size_mb = (run_dir / "samples.jsonl").stat().st_size / 1e6
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        tracemalloc.start()
        start = time.perf_counter()
        log = RunLog.open(run_dir)
        records = log.planned(log.digests())
        read_s = time.perf_counter() - start
        summary = log.summarize(records)
        total_s = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"samples {summary.samples}  ({size_mb:.1f} MB samples.jsonl)")
        print(f"read {read_s:.2f}s  read+summarise {total_s:.2f}s")
        print(
            f"peak traced Python memory {peak / 1e6:.0f} MB; process max RSS "
            f"{rss_after:.0f} MB (was {rss_before:.0f} MB before reading)"
        )
        print(
            f"pass@1 {summary.overall.pass_at[1]:.3f}  pass@{args.trials} "
            f"{summary.overall.pass_at[args.trials]:.3f}"
        )


if __name__ == "__main__":
    main()
