"""What an installed evalrun knows about itself: versions, and the one-time system pieces.

`evalrun --version` reports evalrun's version and install (wheel or checkout), Python, the core
packages and every optional SDK with the extra that brings it - read from installed metadata
(`importlib.metadata`), so no SDK is imported. `run_script` runs the set-up scripts that ship
inside evalrun (evalrun/bundled/scripts) for `evalrun setup docker` and `evalrun image build`, so
a wheel install can set up `sandbox=docker` without a checkout.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from importlib import metadata

from evalrun.bundled import SCRIPTS_DIR
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


def home_line() -> str:
    """Where evalrun lives, for `--help` and `evalrun docs`: the URLs of its package metadata
    (pyproject's [project.urls]); without any, where this copy is installed - never a guessed
    host - and that its docs ship with it."""
    try:
        urls = metadata.metadata("evalrun").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        urls = []
    if urls:
        return "evalrun lives at " + "; ".join(url.replace(", ", ": ", 1) for url in urls)
    return (
        f"evalrun's package metadata names no project URL; this copy: {install_info()['path']}; "
        "its docs ship with it: see `evalrun docs`"
    )


def run_script(name: str, args: list[str]) -> int:
    """Run one of the bundled set-up scripts with `args`; its exit code. A script that needs
    pip gets this Python as `EVALRUN_PYTHON`."""
    script = SCRIPTS_DIR / name
    if not script.is_file():
        raise UsageError(f"{script} is missing from this evalrun install")
    env = {**os.environ, "EVALRUN_PYTHON": sys.executable}
    return subprocess.call(["bash", str(script), *args], env=env)
