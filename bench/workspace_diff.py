"""What recording the agent's workspace diff costs per sample, on each backend.

    .venv/bin/python bench/workspace_diff.py [--repeat 5] [--backends local,bwrap,docker]

For three starting workspaces - a bundled task's (tasks/010-csv-to-json-migration/setup), 500
small text files, and 1,000 files holding 64 MB (some binary) - it opens a sandbox, copies the
workspace in, then times `take_snapshot` (before the agent) and `changes_since` (after
`end_agent`, with 3 files changed by a shell command) - the two steps the diff adds to every
sample. For scale it also times `bash verify.sh`-sized work: one `exec` of `true`. Prints the
median milliseconds of each over `--repeat` sandboxes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from evalrun.run.workspace_diff import changes_since, take_snapshot
from evalrun.sandbox.base import SandboxBackend

REPO = Path(__file__).resolve().parent.parent
AGENT = "echo edit >> f0.txt 2>/dev/null; echo new > added.txt; rm -f f1.txt; true"


def backend(name: str) -> SandboxBackend:
    if name == "local":
        from evalrun.sandbox.local import LocalBackend

        return LocalBackend()
    if name == "bwrap":
        from evalrun.sandbox.bwrap.backend import BwrapBackend

        return BwrapBackend()
    from evalrun.sandbox.docker.backend import DockerBackend

    return DockerBackend()


def workspaces(root: Path) -> dict[str, Path]:
    small = root / "500-text"
    small.mkdir()
    for n in range(500):
        (small / f"f{n}.txt").write_text(f"line {n}\n" * 20)
    big = root / "1000-files-64MB"
    (big / "bin").mkdir(parents=True)
    for n in range(1000):
        if n % 50 == 0:
            (big / "bin" / f"blob{n}.bin").write_bytes(os.urandom(3 * 1024 * 1024))
        else:
            (big / f"f{n}.txt").write_text(f"row {n}\n" * 200)
    return {
        "task 010 setup": REPO / "tasks" / "010-csv-to-json-migration" / "setup",
        "500 text files": small,
        "1000 files, 64 MB": big,
    }


async def one(be: SandboxBackend, setup: Path) -> tuple[float, float, float, str]:
    async with be.open("bench-diff") as box:
        await box.put(setup)
        clock = time.perf_counter()
        await box.exec("true")
        exec_ms = (time.perf_counter() - clock) * 1000
        clock = time.perf_counter()
        before = await take_snapshot(box)
        snap_ms = (time.perf_counter() - clock) * 1000
        await box.exec(AGENT)
        await box.end_agent()
        clock = time.perf_counter()
        changes = await changes_since(box, before)
        diff_ms = (time.perf_counter() - clock) * 1000
        return exec_ms, snap_ms, diff_ms, changes.summary()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--backends", default="local,bwrap,docker")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        spaces = workspaces(Path(tmp))
        print(
            f"{'backend':<8} {'workspace':<20} {'exec true':>10} {'snapshot':>10} "
            f"{'diff':>10}  result"
        )
        for name in args.backends.split(","):
            be = backend(name)
            be.preflight()
            for label, setup in spaces.items():
                runs = [asyncio.run(one(be, setup)) for _ in range(args.repeat)]
                med = [statistics.median(r[i] for r in runs) for i in range(3)]
                print(
                    f"{name:<8} {label:<20} {med[0]:>8.0f}ms {med[1]:>8.0f}ms "
                    f"{med[2]:>8.0f}ms  {runs[-1][3]}"
                )


if __name__ == "__main__":
    main()
