"""`evalrun init` and `evalrun new-task`: starting points a user fills in.

The templates are plain files under `templates/` (shipped in the wheel as package data):

```
templates/project/     `evalrun init [DIR]`: conf/evalrun.yaml extending the packaged config,
                       one example option per user group (agent, provider, profile, slice),
                       tasks/001-word-count/ (an honest example task), README.md, gitignore
templates/task/        `evalrun new-task NAME`: task.yaml ($task_id), setup/, verify/verify.sh
                       (a placeholder that FAILS until written), solution/, wrong/near-miss/
```

A file named `gitignore` is written as `.gitignore` (a dotfile would act on evalrun's own tree).
Neither command overwrites a file: `init` refuses before writing anything if one of its files is
already there (a README.md or .gitignore of the folder's own is left alone), `new-task` refuses
an existing folder.
"""

from __future__ import annotations

import re
import shutil
from importlib.resources import files
from pathlib import Path
from string import Template

from evalrun.errors import UsageError

TEMPLATES = Path(str(files(__name__))) / "templates"
PROJECT_TEMPLATE = TEMPLATES / "project"
TASK_TEMPLATE = TEMPLATES / "task"
KEPT_IF_PRESENT = frozenset({"README.md", ".gitignore"})  # the folder's own wins
TASK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _template_files(root: Path) -> list[tuple[Path, Path]]:
    """(template file, path relative to the destination) for every file under `root`."""
    pairs = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(root)
        if rel.name == "gitignore":
            rel = rel.with_name(".gitignore")
        pairs.append((path, rel))
    return pairs


def init_project(target: Path) -> tuple[list[Path], list[Path]]:
    """Write a starter project into `target` (created if missing).

    Returns (written, kept): the files written, and the folder's own README.md/.gitignore left
    as they were. Raises `UsageError` - before writing anything - when `target` is already a
    project or any other file the template brings exists there.
    """
    if target.exists() and not target.is_dir():
        raise UsageError(f"init: {target} exists and is not a directory")
    pairs = _template_files(PROJECT_TEMPLATE)
    existing = [rel for _, rel in pairs if (target / rel).exists()]
    clashes = [rel for rel in existing if str(rel) not in KEPT_IF_PRESENT]
    if clashes:
        listed = ", ".join(str(rel) for rel in clashes)
        raise UsageError(f"init: {target} already has {listed}; nothing was written")
    written = []
    for source, rel in pairs:
        if rel in existing:
            continue
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)
        written.append(dest)
    return written, [target / rel for rel in existing]


def new_task(name: str, tasks_dir: Path) -> Path:
    """Scaffold `tasks_dir/name/` from the task template; return the folder.

    Raises `UsageError` for a name that cannot be a task id (folder name) or an existing folder.
    """
    if not TASK_NAME.fullmatch(name):
        raise UsageError(
            f"new-task: {name!r} cannot be a task id: use letters, digits, '.', '_' and '-', "
            "starting with a letter or digit (e.g. 002-fix-date-parsing)"
        )
    folder = tasks_dir / name
    if folder.exists():
        raise UsageError(f"new-task: {folder} already exists")
    for source, rel in _template_files(TASK_TEMPLATE):
        dest = folder / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8")
        if rel.name == "task.yaml":
            text = Template(text).substitute(task_id=name)
        dest.write_text(text, encoding="utf-8")
    return folder
