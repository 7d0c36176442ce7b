"""`evalrun setup docker` and `evalrun image build`: the one-time system pieces of sandbox=docker.

Both run set-up scripts bundled with evalrun (`evalrun.cli.install.run_script`): `image build`
builds the base image offline (build-base-image.sh: debootstrap from the apt mirror this machine
uses, then `docker import`); `setup docker` also starts an engine first (docker-engine.sh) and
makes `docker compose` work for Harbor's compose tasks (docker-compose-plugin.sh).
"""

from __future__ import annotations

import argparse

from rich.console import Console

from evalrun.cli.arguments import CommandParser


def _script_parser(command: str, what: str, description: str) -> CommandParser:
    parser = CommandParser(command, description)
    parser.add_argument("what", choices=[what], metavar=what, help=f"(the word {what!r})")
    parser.add_argument("--force", action="store_true", help="rebuild the image even if it exists")
    parser.add_argument(
        "image", metavar="IMAGE", nargs="?", help="the image name (default: evalrun-base:bookworm)"
    )
    return parser


def _image_args(options: argparse.Namespace) -> list[str]:
    return [*(["--force"] if options.force else []), *([options.image] if options.image else [])]


def image_command(args: list[str], console: Console) -> int:
    """`evalrun image build [--force] [IMAGE]`: build sandbox=docker's base image offline (the
    bundled build-base-image.sh: debootstrap from this machine's apt mirror, `docker import`).
    The script prints its own progress; `console` is not used."""
    from evalrun.cli.install import run_script

    parser = _script_parser("image", "build", "Build sandbox=docker's base image offline.")
    return run_script("build-base-image.sh", _image_args(parser.parse(args)))


def setup_command(args: list[str], console: Console) -> int:
    """`evalrun setup docker [--force] [IMAGE]`: install and start a local Docker engine if none
    answers (docker.io from apt; needs root or sudo), install the compose plugin if `docker
    compose` does not answer, then build the offline base image."""
    parser = _script_parser(
        "setup",
        "docker",
        "Start a Docker engine (installing docker.io if missing) with the compose plugin, then "
        "build the base image. "
        "sandbox=bwrap needs only: apt-get install -y bubblewrap",
    )
    from evalrun.cli.install import run_script

    options = parser.parse(args)
    console.print(
        "evalrun setup docker: engine, compose plugin, then the base image", highlight=False
    )
    for script in ("docker-engine.sh", "docker-compose-plugin.sh"):
        status = run_script(script, [])
        if status != 0:
            return status
    return run_script("build-base-image.sh", _image_args(options))
