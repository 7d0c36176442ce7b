"""Wall time versus the ideal for N samples of an agent that waits S seconds, at several
concurrency levels - the shape of a real run, where agents mostly wait on a model.

    .venv/bin/python bench/concurrency.py                    # 200 samples x 1 s at 1, 10, 50
    .venv/bin/python bench/concurrency.py --samples 50 --levels 5 25

Runs the real engine (`evalrun.run.engine.execute`) on the local sandbox, with a real task folder
(setup copy, verify.sh) per sample; only the agent is a stand-in that sleeps.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import tempfile
import time
from pathlib import Path

from evalrun.models.records import AgentResult
from evalrun.run.engine import Batch, execute
from evalrun.run.trial import Limits
from evalrun.sandbox.local import LocalBackend
from evalrun.tasks.loader import load_task


class WaitingAgent:
    name = "waiting"

    def __init__(self, seconds: float):
        self.seconds = seconds

    def preflight(self) -> None:
        return None

    async def run(self, task, sandbox) -> AgentResult:
        await asyncio.sleep(self.seconds)
        await sandbox.write_file("answer.txt", "42")
        return AgentResult(output="42")


def make_task(root: Path) -> Path:
    folder = root / "001-wait"
    (folder / "setup").mkdir(parents=True)
    (folder / "verify").mkdir()
    (folder / "task.yaml").write_text(
        "id: 001-wait\nprompt: wait, then answer\nmax_steps: 1\ndifficulty: easy\n"
    )
    (folder / "setup" / "README.md").write_text("answer in answer.txt\n")
    (folder / "verify" / "verify.sh").write_text(
        '[ "$(cat answer.txt)" = 42 ] && echo PASS || { echo FAIL: wrong; exit 1; }\n'
    )
    return folder


def measure(samples: int, seconds: float, concurrency: int, task_dir: Path) -> float:
    task = load_task(task_dir)
    records = []
    start = time.perf_counter()
    asyncio.run(
        execute(
            [(task, i) for i in range(samples)],
            Batch(
                WaitingAgent(seconds), LocalBackend(), Limits(max_retries=0), "bench", concurrency
            ),
            on_record=records.append,
        )
    )
    wall = time.perf_counter() - start
    assert len(records) == samples and all(r.outcome.value == "pass" for r in records)
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 10, 50])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        task_dir = make_task(Path(tmp))
        print(f"{args.samples} samples of a {args.seconds:g}s agent, local sandbox")
        print(f"{'concurrency':>11} {'wall s':>9} {'ideal s':>9} {'wall/ideal':>10}")
        for level in args.levels:
            ideal = math.ceil(args.samples / level) * args.seconds
            wall = measure(args.samples, args.seconds, level, task_dir)
            print(f"{level:>11} {wall:>9.2f} {ideal:>9.2f} {wall / ideal:>10.2f}")


if __name__ == "__main__":
    main()
