"""What the load-time checks of a task's own scripts cost (`evalrun.tasks.lint`).

    .venv/bin/python bench/task_load.py [--runs 7] [--tasks-dir tasks]

Loading a suite happens at every run's start-up. Each row loads the suite (`scan_suite`) in a
fresh process, `--runs` times, and prints the median wall time of the load alone:

- `no checks`:        the checks patched out (the load as it was before them);
- `cold cache`:       checks with an empty cache: one bash parses every script, every verifier
                      Python file compiles;
- `warm cache`:       checks after a load that passed (the usual case: nothing changed);
- `bash -n each`:     what a `bash -n` process per script would cost instead of the one-bash
                      screen (the scripts only, for comparison).

Nothing here asserts; the figures go into the README.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

LOAD = """
import resource, time
{patch}
from evalrun.tasks.loader import scan_suite

def cpu():
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

started, cpu_started = time.perf_counter(), cpu()
suite = scan_suite(__import__("pathlib").Path({tasks_dir!r}))
assert not suite.unloadable, suite.unloadable
print(time.perf_counter() - started, cpu() - cpu_started)
"""

NO_CHECKS = """
from evalrun.tasks import lint, native
native.static_faults = lambda layout: []
lint.screen = lambda scripts: None
"""

EACH = """
import resource, subprocess, time
from pathlib import Path
from evalrun.tasks import native
from evalrun.tasks.native import TaskLayout
folders = sorted(p for p in Path({tasks_dir!r}).iterdir() if (p / "task.yaml").is_file())
scripts = [s for f in folders for s in native.shell_scripts(TaskLayout(f))]
started = time.perf_counter()
for script in scripts:
    subprocess.run(["bash", "-n", str(script)], capture_output=True)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print(time.perf_counter() - started, kids.ru_utime + kids.ru_stime)
"""


def once(code: str, home: Path) -> tuple[float, float]:
    """(wall, cpu) seconds the child prints, in a fresh process with `home` as its cache home."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(home)},
        check=True,
    )
    wall, cpu = done.stdout.split()[-2:]
    return float(wall), float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tasks-dir", type=Path, default=REPO / "tasks")
    args = parser.parse_args()
    tasks_dir = str(args.tasks_dir.resolve())
    load = LOAD.format(patch="", tasks_dir=tasks_dir)
    rows = {
        "no checks": LOAD.format(patch=NO_CHECKS, tasks_dir=tasks_dir),
        "cold cache": load,
        "warm cache": load,
        "bash -n each": EACH.format(tasks_dir=tasks_dir),
    }
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm"
        once(load, warm)  # fills the warm cache
        for run in range(args.runs):  # interleaved, so a busy moment hits every row alike
            for name, code in rows.items():
                home = warm if name == "warm cache" else Path(tmp) / f"cold-{run}-{name}"
                results[name].append(once(code, home))
    print(f"loading {tasks_dir}, median of {args.runs} fresh processes (cpu: own + children)")
    print(f"{'':<14}{'wall ms':>9}{'cpu ms':>9}")
    for name, values in results.items():
        wall = statistics.median(v[0] for v in values) * 1000
        cpu = statistics.median(v[1] for v in values) * 1000
        print(f"{name:<14}{wall:>9.1f}{cpu:>9.1f}")


if __name__ == "__main__":
    main()
