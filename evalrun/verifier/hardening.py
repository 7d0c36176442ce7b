"""Verifier hardening: how the harness closes the common holes of verifiers it did not write.

A published suite's verifiers are not rewritten for evalrun, and many decide in a python with
the workspace on its import path (tasks/README.md, "Writing a verifier", says why that loses).
What the harness can do without editing them, on by default because it never changes the verdict
of an honest attempt:

- before each verifier, `install` writes the start-up hook (`evalrun.verifier.site`'s
  `sitecustomize.py`) with the task's settings into `<private dir>/verifier-site`, which every
  verifier command has first on PYTHONPATH (`evalrun.sandbox.base.sandbox_env`, which also moves
  python's bytecode cache into the verifier's fresh TMPDIR). In the verifier's deciding pythons
  the standard library then comes from the standard library only, and the process cannot be
  traced by the workspace's code it runs;
- `evalrun.tasks.base.inject` clears what would shadow a hidden module beside it (a planted
  package, extension module or `__pycache__`).

The settings are the task's hidden files (where they land in the sandbox: a python whose main
script is one of them decides) and the module names the task itself ships (`own_modules`): a
standard-library name among them resolves as usual, so a task whose answer is `queue.py` keeps
working. A verifier that truly needs the old behaviour opts out: `verifier_hardening: false` in
its task.yaml, or `verifier_hardening=false` for a whole run (Harbor tasks: the run-wide key).

What it cannot fix is said by `evalrun check`: a verifier that imports the workspace's code into
its deciding process (`os._exit(0)` at import, a patched `unittest`), reads its verdict from a
file the workspace can write, or sets PYTHONPATH itself (which drops the hook).
"""

from __future__ import annotations

import os
import posixpath
import re
import sys
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from evalrun.sandbox.base import VERIFIER_SITE_DIR, Sandbox

if TYPE_CHECKING:
    from evalrun.tasks.loader import Task

HOOK_PACKAGE = "evalrun.verifier.site"  # its modules ship in the wheel like any other
HOOK_FILE = "sitecustomize.py"
DECIDING_FILE = "deciding.py"
# a module named in a task's text files ("write queue.py"): the prompt, solve.sh, a README
MENTIONED = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\.py\b")
TEXT_SUFFIXES = frozenset({".md", ".sh", ".txt", ".yaml", ".yml", ".toml", ".json", ""})
MAX_TEXT_BYTES = 256 * 1024
# Only standard-library names matter to the hook, and only they are written into the sandbox
# (a later step's agent can read the private folder): this python's names, and those that
# pythons newer than it added.
STDLIB_NAMES = frozenset(sys.stdlib_module_names) | {"annotationlib", "compression"}


def hook_path(sandbox: Sandbox) -> str:
    return posixpath.join(sandbox.private_dir, VERIFIER_SITE_DIR, HOOK_FILE)


@cache
def _source(name: str) -> str:
    return resources.files(HOOK_PACKAGE).joinpath(name).read_text(encoding="utf-8")


def render(hidden: list[str], own: frozenset[str]) -> str:
    """The hook's text with these settings: `hidden`, absolute paths in the sandbox; `own`, the
    module names the task ships. Each value replaces its one-line assignment in the source."""
    settings = {"hidden": sorted(set(hidden)), "own": sorted(own)}
    text = _assign(_source(HOOK_FILE), "SETTINGS", settings)
    return _assign(text, "DECIDING", _source(DECIDING_FILE))


def _assign(source: str, name: str, value: object) -> str:
    """`source` with its one line `NAME = ...` assigning `value` instead."""
    assignment = f"{name} = {value!r}"
    pattern = rf"^{name} = .*$"
    text, count = re.subn(pattern, lambda _: assignment, source, count=1, flags=re.MULTILINE)
    if count != 1:
        raise RuntimeError(f"{HOOK_PACKAGE}.{HOOK_FILE} lost its {name} line")
    return text


def sandbox_paths(paths: list[str], workdir: str) -> list[str]:
    """`TaskFormat.hidden_paths` (relative to the workspace, or absolute) as absolute paths."""
    return [
        p if p.startswith("/") else posixpath.normpath(posixpath.join(workdir, p)) for p in paths
    ]


@cache
def own_modules(task_root: Path, fingerprint: str, skip: frozenset[Path]) -> frozenset[str]:
    """The standard-library names a task folder ships or names as modules of its own: `.py`
    files, folders holding python files, and `name.py` written in its text files (its prompt,
    scripts, READMEs) - but not in the `skip` folders (its near-miss and tamper overlays, which
    are no part of the task's answer). Cached per folder content (`fingerprint`)."""
    names: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(task_root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if d != "__pycache__" and here / d not in skip]
        if any(f.endswith(".py") for f in filenames) and dirpath != str(task_root):
            names.add(os.path.basename(dirpath))
        for name in filenames:
            stem, suffix = os.path.splitext(name)
            if suffix == ".py":
                names.add(stem)
            elif suffix in TEXT_SUFFIXES:
                names.update(_mentioned(Path(dirpath, name)))
    return frozenset(names & STDLIB_NAMES)


def _mentioned(path: Path) -> set[str]:
    try:
        if path.stat().st_size > MAX_TEXT_BYTES:
            return set()
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    return set(MENTIONED.findall(text))


async def install(sandbox: Sandbox, task: Task) -> None:
    """Write the hook for `task`'s verifier, about to run in `sandbox` (only after
    `Sandbox.end_agent`: the private folder is then the harness's). One file, one write."""
    fmt = task.format
    skip = frozenset([*fmt.wrong_overlays(), *fmt.tamper_overlays()])
    own = own_modules(task.layout.root, task.fingerprint, skip)
    hidden = sandbox_paths(fmt.hidden_paths(), sandbox.workdir)
    await sandbox.write_file(hook_path(sandbox), render(hidden, own))
