"""Harness overhead per sample on the local sandbox, versus doing the same steps by hand.

    .venv/bin/python bench/harness_overhead.py [--reps 3] [--tasks-dir tasks]

"By hand" is a bash script doing exactly what a sample needs and nothing else: copy setup/, run
setup.sh, overlay solution/ and run solve.sh, copy verify/, run `bash verify.sh`. "evalrun" is
`run_sample` with the oracle agent on `sandbox=local` (workspace, env allow-list, process groups,
bounded capture, grading, the SampleRecord). Both run one sample at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from evalrun.agents.oracle import OracleAgent
from evalrun.models.records import Outcome
from evalrun.run.engine import run_sample
from evalrun.run.trial import Limits
from evalrun.sandbox.base import sandbox_env
from evalrun.sandbox.local import LocalBackend
from evalrun.tasks.loader import load_suite

BY_HAND = r"""
set -u
task=$1; w=$(mktemp -d)
[ -d "$task/setup" ] && cp -a "$task/setup/." "$w/"
cd "$w"
if [ -f setup.sh ]; then bash setup.sh >/dev/null 2>&1; rm -f setup.sh; fi
cp -a "$task/solution/." "$w/"
answer=$(mktemp)
if [ -f solve.sh ]; then bash solve.sh > "$answer" 2>/dev/null; rm -f solve.sh; fi
cp -a "$task/verify/." "$w/"
EVALRUN_ANSWER_FILE=$answer bash verify.sh >/dev/null 2>&1; rc=$?
rm -rf "$w" "$answer"; exit $rc
"""


def by_hand(task_dir: Path) -> float:
    """The same steps in one bash script, with the same environment the sandbox gives."""
    with tempfile.TemporaryDirectory() as home:
        env = sandbox_env(home=home, tmpdir=home, path=os.environ["PATH"])
        start = time.perf_counter()
        proc = subprocess.run(["bash", "-c", BY_HAND, "by-hand", str(task_dir)], env=env)
        elapsed = time.perf_counter() - start
    assert proc.returncode == 0, f"{task_dir.name}: gold failed by hand"
    return elapsed


def with_evalrun(task) -> float:
    start = time.perf_counter()
    rec = asyncio.run(run_sample(task, 0, OracleAgent(), LocalBackend(), Limits(), "bench"))
    elapsed = time.perf_counter() - start
    assert rec.outcome is Outcome.passed, f"{task.id}: {rec.reason}"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--tasks-dir", type=Path, default=Path(__file__).parent.parent / "tasks")
    args = parser.parse_args()
    tasks = load_suite(args.tasks_dir)
    print(f"{'task':<36} {'by hand s':>10} {'evalrun s':>10} {'ratio':>7}")
    hand_all, ours_all = [], []
    for task in tasks:
        hand = statistics.median(by_hand(task.layout.root) for _ in range(args.reps))
        ours = statistics.median(with_evalrun(task) for _ in range(args.reps))
        hand_all.append(hand)
        ours_all.append(ours)
        print(f"{task.id:<36} {hand:>10.3f} {ours:>10.3f} {ours / hand:>7.2f}")
    hand_mean, ours_mean = statistics.mean(hand_all), statistics.mean(ours_all)
    print(
        f"{'mean per sample':<36} {hand_mean:>10.3f} {ours_mean:>10.3f} "
        f"{ours_mean / hand_mean:>7.2f}"
    )
    print(f"harness overhead per sample: {(ours_mean - hand_mean) * 1000:+.0f} ms")


if __name__ == "__main__":
    main()
