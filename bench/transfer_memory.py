"""Peak harness memory while a task's setup/ goes into a sandbox: before vs after streaming.

    .venv/bin/python bench/transfer_memory.py [--size-gb 2] [--backends bwrap,docker]
                                              [--before 23b52dc]

A task whose setup/ holds one sparse file of `--size-gb` GiB (it takes no disk on the host; it
is read and copied at its full size) is prepared - `TaskFormat.prepare`: open a sandbox, copy
setup/ in - once per backend, in a fresh Python process each, and that process's peak resident
memory (`ru_maxrss`) is reported. "before" runs the same measurement against the evalrun package
of the `--before` commit (exported with `git archive` to a temp folder), by default the last one
where `put` built the whole tar in memory; "after" is this checkout. Printed side by side, with
the seconds each copy took. Each sample's disk limit is raised above the file's size for the
measurement (the shipped `disk_mb` would stop it, as it should).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BEFORE = "23b52dc"  # last commit with whole-archive transfers

MEASURE = r"""
import asyncio, json, resource, sys, time
from pathlib import Path
from evalrun.tasks.loader import load_task

backend_name, task_dir, disk_mb = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
if backend_name == "bwrap":
    from evalrun.sandbox.bwrap.backend import BwrapBackend as Backend
elif backend_name == "docker":
    from evalrun.sandbox.docker.backend import DockerBackend as Backend
else:
    from evalrun.sandbox.local import LocalBackend as Backend
try:
    backend = Backend(disk_mb=disk_mb)
except TypeError:  # a version without disk limits
    backend = Backend()
backend.preflight()
task = load_task(task_dir)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

async def main():
    async with backend.open("bench") as box:
        started = time.monotonic()
        await task.format.prepare(box, 3600)
        took = time.monotonic() - started
        size = (await box.exec("stat -c %s big.bin")).stdout.strip()
    return took, size

took, size = asyncio.run(main())
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak_mib": peak / 1024, "base_mib": base / 1024, "seconds": took, "size": size}))
"""


def make_task(root: Path, size_gb: float) -> Path:
    folder = root / "001-big-setup"
    (folder / "setup").mkdir(parents=True)
    (folder / "verify").mkdir()
    (folder / "task.yaml").write_text(
        "id: 001-big-setup\nprompt: Look at big.bin.\nmax_steps: 1\ndifficulty: easy\n"
    )
    (folder / "verify/verify.sh").write_text("exit 1\n")
    with open(folder / "setup/big.bin", "wb") as handle:
        handle.truncate(int(size_gb * 1024**3))
    return folder


def export(rev: str, into: Path) -> Path:
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "evalrun", "conf"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def measure(pythonpath: Path, backend: str, task: Path, disk_mb: int) -> dict | str:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, backend, str(task), str(disk_mb)],
        capture_output=True,
        text=True,
        env=env,
        cwd=pythonpath,
    )
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or ["failed"])[-1][:80]
    return json.loads(done.stdout.strip().splitlines()[-1])


def cell(result: dict | str) -> str:
    if isinstance(result, str):
        return f"({result})"
    return f"{result['peak_mib']:8.0f} MiB peak  {result['seconds']:6.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-gb", type=float, default=2.0)
    parser.add_argument("--backends", default="bwrap,docker")
    parser.add_argument("--before", default=DEFAULT_BEFORE)
    args = parser.parse_args()
    disk_mb = int(args.size_gb * 1024) + 1024
    with tempfile.TemporaryDirectory(prefix="evalrun-bench-") as tmp:
        root = Path(tmp)
        task = make_task(root / "tasks", args.size_gb)
        before = export(args.before, (root / "before").resolve())
        print(f"setup/big.bin: {args.size_gb:g} GiB sparse; peak RSS of the harness process")
        print(f"{'backend':<8} {'before (' + args.before + ')':<34} after (this checkout)")
        for name in args.backends.split(","):
            old = measure(before, name, task, disk_mb)
            new = measure(REPO, name, task, disk_mb)
            print(f"{name:<8} {cell(old):<34} {cell(new)}", flush=True)


if __name__ == "__main__":
    main()
