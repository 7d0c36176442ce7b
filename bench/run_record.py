"""The run record's costs and guarantees, measured: collisions, duplicates, scrubbing, state.

    .venv/bin/python bench/run_record.py [--pairs 6] [--resumes 3]

1. Same-second runs: `--pairs` times, two real `evalrun` processes released at the same instant
   (0.2 s into a second) with the default stamped run_dir. Counts pairs that got one shared
   directory, and pairs whose directories held another run's samples (both 0 is the contract).
2. Concurrent resumes: `--resumes` times, a 4-task x 3-trial run is SIGKILLed after 2 samples,
   then two `evalrun resume=` start at the same instant. Counts refused resumes and duplicate
   records (the contract: exactly one refused each time, 0 duplicates).
3. Scrubbing cost: one sample with a 20,000-character output, 200 trajectory steps and a 4 KB
   verify output, scrubbed against 12 secret values (time per sample).
4. State of a 10,000-sample run (`RunLog.state`: plan.json + the cell of each samples.jsonl line),
   which `evalrun ls` does for every run it lists.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from evalrun.models.plan import PlanFile, PlannedTask, RunKind
from evalrun.models.records import AgentResult, Outcome, SampleRecord, ToolCall
from evalrun.rundir.log import RunLog
from evalrun.rundir.redact import SecretValues
from evalrun.rundir.store import RunStore

LAUNCH = """
import sys, time
import evalrun.run.plan, evalrun.run.runner, hydra.main  # imported before the barrier: no import jitter
from evalrun.cli.main import main
time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
main(sys.argv[2:])
"""
TASK_YAML = "id: {id}\nprompt: Write 42 into answer.txt.\nmax_steps: 5\ndifficulty: easy\n"


def make_suite(root: Path, tasks: int, setup_sleep: float) -> Path:
    for i in range(1, tasks + 1):
        folder = root / f"00{i}-t"
        (folder / "setup").mkdir(parents=True)
        (folder / "verify").mkdir()
        (folder / "solution").mkdir()
        (folder / "task.yaml").write_text(TASK_YAML.format(id=folder.name))
        (folder / "setup" / "setup.sh").write_text(f"sleep {setup_sleep}\n")
        (folder / "verify" / "verify.sh").write_text(
            '[ "$(cat answer.txt)" = 42 ] && echo PASS || { echo "FAIL: no"; exit 1; }\n'
        )
        (folder / "solution" / "answer.txt").write_text("42")
    return root


def together(cwd: Path, *commands: list[str]) -> list[int]:
    go = math.ceil(time.time()) + 3.2
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LAUNCH, str(go), *args],
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for args in commands
    ]
    return [p.wait() for p in procs]


def same_second(root: Path, pairs: int) -> None:
    suite = make_suite(root / "suite", 1, 0)
    shared = mixed = straddled = 0
    for n in range(pairs):
        cwd = root / f"pair{n}"
        cwd.mkdir()
        together(cwd, [f"tasks_dir={suite}", "trials=2"], [f"tasks_dir={suite}", "trials=2"])
        dirs = sorted((cwd / "runs").iterdir())
        stamps = {"-".join(d.name.split("-")[:2]) for d in dirs}
        straddled += len(stamps) > 1
        shared += len(dirs) < 2
        for d in dirs:
            lines = (d / "samples.jsonl").read_text().splitlines()
            mixed += len(lines) != 2 or {json.loads(x)["run_id"] for x in lines} != {d.name}
    print(
        f"same-second runs: {pairs} pairs ({pairs - straddled} within one second): "
        f"{shared} shared a directory, {mixed} directories held another run's samples"
    )


def concurrent_resumes(root: Path, attempts: int) -> None:
    suite = make_suite(root / "suite-r", 4, 0.3)
    refused = duplicates = 0
    for n in range(attempts):
        run_dir = root / f"resume{n}"
        args = [f"tasks_dir={suite}", f"run_dir={run_dir}", "trials=3", "concurrency=2"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "evalrun.cli.main", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        samples = run_dir / "samples.jsonl"
        while proc.poll() is None and (not samples.exists() or samples.read_text().count("\n") < 2):
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        codes = together(root, [f"resume={run_dir}"], [f"resume={run_dir}"])
        refused += codes.count(2)
        cells = Counter(
            (json.loads(x)["task_id"], json.loads(x)["trial"])
            for x in samples.read_text().splitlines()
        )
        duplicates += sum(c - 1 for c in cells.values())
    print(f"concurrent resumes: {attempts} pairs: {refused} refused, {duplicates} duplicates")


def scrub_cost() -> None:
    secrets = SecretValues({f"sk-secret-value-{i:04d}-abcdef": f"KEY_{i}" for i in range(12)})
    record = SampleRecord(
        run_id="b",
        task_id="t",
        fingerprint="f",
        trial=0,
        outcome=Outcome.passed,
        verify_output="FAIL: expected 3 got 4\n" * 180,
        agent=AgentResult(
            output="x" * 20_000,
            trajectory=[
                ToolCall(name="bash", args={"command": f"ls {i}"}, result="a b c " * 50)
                for i in range(200)
            ],
        ),
        started_at=0,
        finished_at=1,
    )
    rounds = 200
    start = time.perf_counter()
    for _ in range(rounds):
        secrets.scrub_record(record)
    per = (time.perf_counter() - start) / rounds
    size = len(record.model_dump_json())
    print(f"scrubbing: {per * 1000:.2f} ms per sample ({size / 1024:.0f} KB record, 12 secrets)")


def state_cost(root: Path) -> None:
    run_dir = root / "big"
    run_dir.mkdir()
    tasks, trials = 500, 20
    store = RunStore(run_dir)
    store.write_config({})
    tasks_in_plan = [PlannedTask(id=f"{t:04d}", fingerprint="f") for t in range(tasks)]
    store.write_plan(
        PlanFile(
            schema_version=1,
            kind=RunKind.tasks,
            run_id="big",
            tasks_dir="tasks",
            trials=trials,
            tasks=tasks_in_plan,
        )
    )
    line = SampleRecord(
        run_id="b",
        task_id="0000",
        fingerprint="f",
        trial=0,
        outcome=Outcome.passed,
        verify_output="FAIL: x\n" * 100,
        agent=AgentResult(output="done " * 300),
        started_at=0,
        finished_at=1,
    ).model_dump()
    with (run_dir / "samples.jsonl").open("w") as handle:
        for t in range(tasks):
            for i in range(trials - (1 if t == 7 else 0)):
                handle.write(json.dumps({**line, "task_id": f"{t:04d}", "trial": i}) + "\n")
    size = (run_dir / "samples.jsonl").stat().st_size / 1e6
    start = time.perf_counter()
    state = RunLog.open(run_dir).state()
    took = time.perf_counter() - start
    print(
        f"state of a 10,000-cell run ({size:.0f} MB samples.jsonl): {took:.2f} s -> {state.label}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--resumes", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        scrub_cost()
        state_cost(root)
        same_second(root, args.pairs)
        concurrent_resumes(root, args.resumes)


if __name__ == "__main__":
    main()
