"""Task folders: the one place that knows their layout, loads them strictly and fingerprints them.

```
NNN-slug/
  task.yaml        id, prompt, max_steps, difficulty, tags, judges, agent_timeout_s
  setup/           copied verbatim into a fresh workspace; setup/setup.sh runs there, then goes
  verify/          the hidden oracle: verify.sh (required) + helpers, injected only after the agent
  solution/        gold overlay (used by `evalrun check` and agent=oracle)
  wrong/<name>/    near-miss overlays that must fail (used by `evalrun check`)
```

Loading is strict: a bad folder raises `TaskFormatError` naming the folder, file and field before
any sandbox starts, so a broken task can never silently score 0.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalrun.errors import TaskFormatError

TASK_FILE = "task.yaml"
_IGNORED_NAMES = {"__pycache__", ".DS_Store"}


class Difficulty(StrEnum):
    easy = "easy"
    medium = "medium"
    hard = "hard"


class JudgeSpec(BaseModel):
    """A G-Eval judge for one task: scores samples 0-1, never overrides the oracle."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    task_introduction: str = Field(min_length=1)
    evaluation_criteria: str = Field(min_length=1)


class TaskSpec(BaseModel):
    """The contents of task.yaml."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    prompt: str
    max_steps: int = Field(gt=0)
    difficulty: Difficulty
    tags: tuple[str, ...] = ()
    judges: tuple[JudgeSpec, ...] = ()
    agent_timeout_s: float | None = Field(default=None, gt=0)

    @field_validator("prompt")
    @classmethod
    def _prompt_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


@dataclass(frozen=True)
class TaskLayout:
    """Every path of a task folder, so nothing else spells them."""

    root: Path

    @property
    def task_file(self) -> Path:
        return self.root / TASK_FILE

    @property
    def setup_dir(self) -> Path:
        return self.root / "setup"

    @property
    def verify_dir(self) -> Path:
        return self.root / "verify"

    @property
    def verify_script(self) -> Path:
        return self.verify_dir / "verify.sh"

    @property
    def solution_dir(self) -> Path:
        return self.root / "solution"

    @property
    def wrong_dirs(self) -> list[Path]:
        wrong = self.root / "wrong"
        if not wrong.is_dir():
            return []
        return sorted(p for p in wrong.iterdir() if p.is_dir() and p.name not in _IGNORED_NAMES)


# Names inside a workspace that the harness gives meaning to.
SETUP_SCRIPT = "setup.sh"  # in setup/: run once after copying, then removed
SOLVE_SCRIPT = "solve.sh"  # in an overlay: run after overlaying; its stdout is the final answer
VERIFY_SCRIPT = "verify.sh"
ANSWER_ENV = "EVALRUN_ANSWER_FILE"  # verify.sh finds the agent's final message at this path


@dataclass(frozen=True)
class Task:
    """A loaded, validated task: its spec, its folder and a content fingerprint."""

    spec: TaskSpec
    layout: TaskLayout
    fingerprint: str = field(compare=False)

    @property
    def id(self) -> str:
        return self.spec.id


def fingerprint(folder: Path) -> str:
    """sha256 over every file's relative path, executable bit and bytes (symlinks by target)."""
    digest = hashlib.sha256()
    for path in sorted(_walk(folder)):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            digest.update(f"L {rel} -> {os.readlink(path)}\n".encode())
            continue
        mode = "x" if os.access(path, os.X_OK) else "-"
        digest.update(f"F {rel} {mode} {path.stat().st_size}\n".encode())
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 16), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _walk(folder: Path) -> Iterable[Path]:
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d not in _IGNORED_NAMES]
        base = Path(dirpath)
        for name in filenames:
            if name not in _IGNORED_NAMES and not name.endswith(".pyc"):
                yield base / name
        for name in dirnames:
            if (base / name).is_symlink():
                yield base / name


def load_task(folder: Path) -> Task:
    """Load one task folder; raise `TaskFormatError` naming the file and field on any problem."""
    folder = Path(folder)
    layout = TaskLayout(folder)
    if not layout.task_file.is_file():
        raise TaskFormatError(layout.task_file, "missing: every task folder needs a task.yaml")
    try:
        raw = yaml.safe_load(layout.task_file.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise TaskFormatError(layout.task_file, f"not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise TaskFormatError(
            layout.task_file, f"expected a mapping of fields, got {type(raw).__name__}"
        )
    try:
        spec = TaskSpec.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or None
        message = first["msg"]
        if first["type"] == "extra_forbidden":
            allowed = ", ".join(TaskSpec.model_fields)
            message = f"unknown key (allowed: {allowed})"
        elif "input" in first and first["type"] not in ("missing",):
            message = f"{message} (got {first['input']!r})"
        raise TaskFormatError(layout.task_file, message, field=loc) from exc
    if spec.id != folder.name:
        raise TaskFormatError(
            layout.task_file, f"id {spec.id!r} does not match its folder name {folder.name!r}", "id"
        )
    if not layout.verify_script.is_file():
        raise TaskFormatError(
            layout.verify_script, "missing: the oracle verify/verify.sh is required"
        )
    _check_symlinks(folder)
    return Task(spec=spec, layout=layout, fingerprint=fingerprint(folder))


def _check_symlinks(folder: Path) -> None:
    root = folder.resolve()
    for path in _walk(folder):
        if path.is_symlink():
            target = path.resolve()
            if target != root and root not in target.parents:
                raise TaskFormatError(
                    path, f"symlink points outside the task folder (to {os.readlink(path)})"
                )


def is_task_folder(path: Path) -> bool:
    return path.is_dir() and not path.name.startswith((".", "_"))


def load_suite(tasks_dir: Path) -> list[Task]:
    """Load every task folder directly below `tasks_dir`, sorted by id; ids must be unique."""
    tasks_dir = Path(tasks_dir)
    if not tasks_dir.is_dir():
        raise TaskFormatError(tasks_dir, "tasks_dir is not a directory")
    tasks: list[Task] = []
    seen: dict[str, Path] = {}
    for folder in sorted(p for p in tasks_dir.iterdir() if is_task_folder(p)):
        task = load_task(folder)
        if task.id in seen:
            raise TaskFormatError(
                task.layout.task_file, f"duplicate id {task.id!r} (also in {seen[task.id]})", "id"
            )
        seen[task.id] = folder
        tasks.append(task)
    if not tasks:
        raise TaskFormatError(tasks_dir, "no task folders found (expected NNN-slug/task.yaml)")
    return tasks
