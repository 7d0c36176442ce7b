"""What an installed evalrun knows about itself: versions, and the one-time system pieces.

`evalrun --version` reports evalrun's version and install (wheel or checkout), Python, the core
packages and every optional SDK with the extra that brings it - read from installed metadata
(`importlib.metadata`), so no SDK is imported. `evalrun setup docker` and `evalrun image build`
run the set-up scripts that ship inside evalrun (evalrun/bundled/scripts), so a wheel install can
set up `sandbox=docker` without a checkout.
"""

from __future__ import annotations

import argparse
import platform
import re
import subprocess
from importlib import metadata

from rich.console import Console

from evalrun.bundled import SCRIPTS_DIR
from evalrun.cli.arguments import CommandParser
from evalrun.errors import UsageError
from evalrun.rundir.provenance import git_state, install_info, package_versions, source_tree

CORE_PACKAGES = ("hydra-core", "omegaconf", "pydantic")
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def optional_packages() -> dict[str, list[str]]:
    """Package -> the extras of evalrun that install it, from evalrun's own metadata (so the
    extras are named once: in pyproject.toml). Empty when evalrun's metadata is not installed."""
    try:
        requirements = metadata.requires("evalrun") or []
    except metadata.PackageNotFoundError:
        return {}
    found: dict[str, list[str]] = {}
    for requirement in requirements:
        extra = _EXTRA_MARKER.search(requirement)
        name = _NAME.match(requirement)
        if extra is None or name is None or name.group(0) == "evalrun":
            continue
        if extra.group(1) in ("dev", "all"):  # dev tools; `all` is the other extras together
            continue
        found.setdefault(name.group(0).split("[")[0], []).append(extra.group(1))
    return found


def version_text() -> str:
    """The lines `evalrun --version` prints."""
    install = install_info()
    where = f"{install['kind']}: {install['path']}"
    tree = source_tree()
    git = git_state(tree) if tree is not None else None
    if git is not None:
        where += f", git {git['sha'][:12]}" + (" with uncommitted changes" if git["dirty"] else "")
    optional = optional_packages()
    versions = package_versions(("evalrun", *CORE_PACKAGES, *optional))
    lines = [
        f"evalrun {versions['evalrun'] or '(not installed)'} ({where})",
        f"python {platform.python_version()}",
        "  ".join(f"{name} {versions[name]}" for name in CORE_PACKAGES),
        "optional SDKs:",
    ]
    for name, extras in optional.items():
        version = versions[name] or "not installed"
        hint = " or ".join(f"evalrun[{extra}]" for extra in extras)
        lines.append(f"  {name:<24} {version:<16} {hint}")
    return "\n".join(lines)


def run_script(name: str, args: list[str]) -> int:
    """Run one of the bundled set-up scripts with `args`; its exit code."""
    script = SCRIPTS_DIR / name
    if not script.is_file():
        raise UsageError(f"{script} is missing from this evalrun install")
    return subprocess.call(["bash", str(script), *args])


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


def image_command(args: list[str]) -> int:
    """`evalrun image build [--force] [IMAGE]`: build sandbox=docker's base image offline (the
    bundled build-base-image.sh: debootstrap from this machine's apt mirror, `docker import`)."""
    parser = _script_parser("image", "build", "Build sandbox=docker's base image offline.")
    return run_script("build-base-image.sh", _image_args(parser.parse(args)))


def setup_command(args: list[str], console: Console) -> int:
    """`evalrun setup docker [--force] [IMAGE]`: install and start a local Docker engine if none
    answers (docker.io from apt; needs root or sudo), then build the offline base image."""
    parser = _script_parser(
        "setup",
        "docker",
        "Start a Docker engine (installing docker.io if missing), then build the base image. "
        "sandbox=bwrap needs only: apt-get install -y bubblewrap",
    )
    options = parser.parse(args)
    console.print("evalrun setup docker: engine, then the base image", highlight=False)
    status = run_script("docker-engine.sh", [])
    if status != 0:
        return status
    return run_script("build-base-image.sh", _image_args(options))
