"""Harbor's own validator on the trajectory.json files evalrun wrote: does Harbor accept them?

    <a python with harbor installed>/bin/python bench/atif_harbor.py PATH...

Each PATH is a run directory (every samples/*/*/trajectory.json in it), a folder searched for
trajectory.json files, or one file. Each file goes through Harbor's `TrajectoryValidator` (its
pydantic models of ATIF, RFC 0001); printed: how many were accepted and, for each one refused,
Harbor's errors. Exit 1 when any file is refused or none was found. Harbor is not one of
evalrun's dependencies (it needs a newer Python), so this runs in an environment of its own and
imports nothing from evalrun; the tests validate the same files against evalrun's models and an
independent JSON Schema (tests/atif_check.py).
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import version
from pathlib import Path


def trajectory_files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        found += [path] if path.is_file() else sorted(path.rglob("trajectory.json"))
    return found


def main() -> int:
    from harbor.utils.trajectory_validator import TrajectoryValidator

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    files = trajectory_files(parser.parse_args().paths)
    refused = 0
    for path in files:
        validator = TrajectoryValidator()
        if not validator.validate(path):
            refused += 1
            print(f"REFUSED {path}")
            for error in validator.errors:
                print(f"  {error}")
    print(
        f"harbor {version('harbor')} (python {sys.version.split()[0]}): "
        f"{len(files) - refused} of {len(files)} trajectory.json files accepted"
    )
    return 1 if refused or not files else 0


if __name__ == "__main__":
    sys.exit(main())
