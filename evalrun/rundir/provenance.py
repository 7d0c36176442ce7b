"""What, beyond the resolved config and the task fingerprints, it takes to reproduce a run.

How evalrun is installed (an installed wheel, or a source checkout and then its git commit and
whether the tree had uncommitted changes), the git state of the tasks' repo, the Python version,
and the versions of evalrun and the packages that shape a result. Collected
without importing any of those packages (`importlib.metadata` reads their installed metadata),
so it costs a few milliseconds plus two short `git` calls.
"""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import evalrun
from evalrun.models.plan import TasksSource

KEY_PACKAGES = (
    "evalrun",
    "hydra-core",
    "omegaconf",
    "pydantic",
    "pydantic-ai-slim",
    "openai",
    "litellm",
    "opik",
    "docker",
    "modal",
)


def package_versions(names: tuple[str, ...] = KEY_PACKAGES) -> dict[str, str | None]:
    """Installed version of each package, None when it is not installed."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_state(folder: Path) -> dict[str, Any] | None:
    """`{"sha": ..., "dirty": bool}` of the git work tree holding `folder`; None outside one
    (or without git). `dirty` means uncommitted changes somewhere in that work tree."""

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )

    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return None
        status = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.TimeoutExpired):
        return None
    return {"sha": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


def source_tree() -> Path | None:
    """The source checkout evalrun is imported from (the folder holding its pyproject.toml, as in
    an editable install); None when evalrun runs from an installed wheel."""
    root = Path(evalrun.__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() else None


def install_info() -> dict[str, Any]:
    """`{"kind": "checkout" | "wheel", "path": ...}`: where the running evalrun comes from."""
    tree = source_tree()
    if tree is not None:
        return {"kind": "checkout", "path": str(tree)}
    return {"kind": "wheel", "path": str(Path(evalrun.__file__).resolve().parent)}


def reproduction_info(tasks_dir: Path, source: TasksSource | None = None) -> dict[str, Any]:
    """How evalrun is installed, git state of evalrun (a checkout only) and of the tasks, Python
    and package versions; for a suite given by reference, `tasks_source`: the URL, commit,
    sub-folder and registry dataset it resolved to."""
    tree = source_tree()
    given = {"tasks_source": source.model_dump(mode="json")} if source is not None else {}
    return {
        **given,
        "install": install_info(),
        "git": {
            "evalrun": git_state(tree) if tree is not None else None,
            "tasks": git_state(Path(tasks_dir)),
        },
        "python": platform.python_version(),
        "packages": package_versions(),
    }
