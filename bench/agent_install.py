"""What each agent CLI preset costs to install fresh: seconds and disk, per agent.

    .venv/bin/python bench/agent_install.py [--agents claude_code,codex,...] [--docker]

Every preset is installed into a throwaway cache with empty npm and pip caches (so each package
really comes from its registry), the way `evalrun agents install` does on a new machine. Printed
per agent: seconds, MB on disk (the runtime, e.g. node, counted apart), and with --docker the
seconds to build its derived image layer on the local base image (sandbox=docker's first use).
The throwaway folders are removed afterwards; the figures in the README come from this script.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from evalrun.agents.cache import build_preset, preset_names
from evalrun.agents.install import describe
from evalrun.cli.hydra import compose_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default=",".join(preset_names()))
    parser.add_argument("--docker", action="store_true", help="also time the derived image layer")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="evalrun-bench-install-"))
    scratch.chmod(0o755)
    os.environ.update(
        EVALRUN_AGENT_CACHE=str(scratch / "cache"),
        PIP_NO_CACHE_DIR="1",
        npm_config_cache=str(scratch / "npm"),
    )
    try:
        print(f"{'agent':<16} {'version':<10} {'install s':>9} {'MB':>6}  layer s")
        for name in args.agents.split(","):
            agent = build_preset(name, compose_config)
            started = time.monotonic()
            target = agent.install()
            seconds = time.monotonic() - started
            info = describe(target)
            layer = ""
            if args.docker:
                from evalrun.sandbox.docker.backend import DockerBackend

                backend = DockerBackend()
                started = time.monotonic()
                backend.add_read_only(target.folders(), live=False)
                layer = f"{time.monotonic() - started:.1f} ({backend.image})"
                backend.client.images.remove(backend.image, force=True)
            runtime = [f"+ {p.name}" for p in target.folders()[1:]]
            print(
                f"{name:<16} {agent.version:<10} {seconds:>9.1f} {info['bytes'] / 1e6:>6.0f}  "
                f"{layer} {' '.join(runtime)}",
                flush=True,
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
