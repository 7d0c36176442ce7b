"""Start-up time of the CLI, side by side with a bare Hydra app.

    .venv/bin/python bench/startup.py [--runs 7]

Three commands, each run `--runs` times in a fresh process (the median wall time is printed):

- `bare`:     a Hydra app of a dozen lines composing two files (a primary config with one group
              default) and printing the result: the floor any Hydra CLI pays.
- `dry run`:  `evalrun dry_run=true` on the bundled suite (compose, plan, print the plan).
- `--help`:   `evalrun --help` (Hydra's help page with evalrun's groups listed).

Also the number of modules each has imported when it exits. The goal (issue 15): the dry run at
most 1.5x the bare app. Nothing here asserts; the figures go into the README.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BARE_APP = """
import hydra
from omegaconf import OmegaConf

@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg):
    print(OmegaConf.to_yaml(cfg))

main()
"""
BARE_CONFIG = "defaults:\n  - db: mysql\n  - _self_\nname: bare\n"
BARE_GROUP = "driver: mysql\nuser: omry\n"

COUNT = "import atexit, sys; atexit.register(lambda: print('modules', len(sys.modules), file=sys.stderr))"


def bare_app(root: Path) -> Path:
    (root / "conf" / "db").mkdir(parents=True)
    (root / "conf" / "config.yaml").write_text(BARE_CONFIG)
    (root / "conf" / "db" / "mysql.yaml").write_text(BARE_GROUP)
    app = root / "app.py"
    app.write_text(BARE_APP)
    return app


def timed(argv: list[str], cwd: Path, runs: int) -> tuple[float, int]:
    """Median wall seconds over `runs` fresh processes, and the modules loaded at exit."""
    times = []
    modules = 0
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{argv} failed ({done.returncode}):\n{done.stderr[-2000:]}")
        for line in done.stderr.splitlines():
            if line.startswith("modules "):
                modules = int(line.split()[1])
    return statistics.median(times), modules


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        app = bare_app(root)
        work = root / "work"
        work.mkdir()
        cli = f"{COUNT}; from evalrun.cli.main import main; main()"
        rows = [
            (
                "bare Hydra app",
                [
                    py,
                    "-c",
                    f"{COUNT}; import runpy, sys; sys.argv=['app.py']; "
                    f"runpy.run_path({str(app)!r}, run_name='__main__')",
                ],
                root,
            ),
            (
                "evalrun dry_run=true",
                [py, "-c", cli.replace("main()", "main(['dry_run=true'])")],
                work,
            ),
            ("evalrun --help", [py, "-c", cli.replace("main()", "main(['--help'])")], work),
        ]
        results = [(name, *timed(argv, cwd, args.runs)) for name, argv, cwd in rows]
    base = results[0][1]
    print(f"start-up, median of {args.runs} fresh processes")
    print(f"{'command':<24}{'seconds':>9}{'x bare':>9}{'modules':>9}")
    for name, seconds, modules in results:
        print(f"{name:<24}{seconds:>9.3f}{seconds / base:>9.2f}{modules:>9}")


if __name__ == "__main__":
    main()
