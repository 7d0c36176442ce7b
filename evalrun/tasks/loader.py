"""Task folders: recognise each folder's format by its files, load it strictly, fingerprint it.

```
tasks_dir/
  001-native/    task.yaml                     -> evalrun's format (`formats.native`)
  some-harbor/   task.toml + instruction.md    -> Harbor / Terminal-Bench 2.0 (`formats.harbor`)
```

A tasks_dir may mix both. Every format maps onto the same `Task`: a `TaskSpec` (prompt, limits,
difficulty, tags) plus the `TaskFormat` that prepares, solves and grades its samples. A bad
folder raises `TaskFormatError` naming the folder, file and field before any sandbox starts, so
a broken task can never silently score 0 - and one bad folder never blocks the rest of a suite:
`scan_suite` loads every folder it can and reports each one it cannot (file, key, reason), which
planning skips (or refuses, when named in `ids=`). `load_suite` is the all-or-nothing variant.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evalrun.config.schema import EvalConfig
from evalrun.errors import TaskFormatError, UsageError, bad_value
from evalrun.models.plan import TasksSource
from evalrun.sandbox.base import SandboxBackend
from evalrun.tasks import lint, native
from evalrun.tasks.base import HARBOR_TASK_FILE, FolderLayout, TaskFormat, TaskSpec
from evalrun.tasks.native import IGNORED_NAMES, TASK_FILE, TaskLayout


@dataclass(frozen=True)
class Task:
    """A loaded, validated task: its spec, its format and a content fingerprint.

    `verifier_hardening`: whether grading hardens the task's verifier
    (`evalrun.verifier.hardening`): on unless the run (`verifier_hardening=false`) or the task's
    own spec turns it off.
    """

    spec: TaskSpec
    format: TaskFormat = field(compare=False)
    fingerprint: str = field(compare=False)
    verifier_hardening: bool = EvalConfig.verifier_hardening

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def layout(self) -> FolderLayout:
        """The format's own layout (`root` and `task_file` always; the rest per format)."""
        return self.format.layout


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
        dirnames[:] = [d for d in dirnames if d not in IGNORED_NAMES]
        base = Path(dirpath)
        for name in filenames:
            if name not in IGNORED_NAMES and not name.endswith(".pyc"):
                yield base / name
        for name in dirnames:
            if (base / name).is_symlink():
                yield base / name


def load_task(
    folder: Path,
    *,
    reward_threshold: float = EvalConfig.reward_threshold,
    strict: bool = False,
    verifier_hardening: bool = EvalConfig.verifier_hardening,
) -> Task:
    """Load one task folder in whichever format its files say; raise `TaskFormatError` naming the
    file and field on any problem. `reward_threshold` is the pass mark for reward-based formats;
    `strict` refuses keys a foreign format's own runner would ignore (they are warnings else);
    `verifier_hardening` false turns verifier hardening off whatever the task says."""
    folder = Path(folder)
    native_file, harbor_file = folder / TASK_FILE, folder / HARBOR_TASK_FILE
    if native_file.is_file() and harbor_file.is_file():
        raise TaskFormatError(
            folder, f"holds both {TASK_FILE} (evalrun) and {HARBOR_TASK_FILE} (Harbor); keep one"
        )
    fmt: TaskFormat
    if native_file.is_file():
        spec, fmt = native.load(folder)
    elif harbor_file.is_file():  # imported only here: a native suite's start-up stays light
        from evalrun.tasks.harbor import loading as harbor

        spec, fmt = harbor.load(folder, reward_threshold=reward_threshold, strict=strict)
    else:
        raise TaskFormatError(
            native_file,
            f"missing: every task folder needs a {TASK_FILE} (evalrun) or a "
            f"{HARBOR_TASK_FILE} + instruction.md (Harbor)",
        )
    _check_symlinks(folder)
    hardened = verifier_hardening and spec.verifier_hardening
    return Task(spec, fmt, fingerprint(folder), verifier_hardening=hardened)


def _check_symlinks(folder: Path) -> None:
    root = folder.resolve()
    for path in _walk(folder):
        if path.is_symlink():
            target = path.resolve()
            if target != root and root not in target.parents:
                raise TaskFormatError(
                    path, f"symlink points outside the task folder (to {os.readlink(path)})"
                )


NOT_TASKS = ("runs",)  # what evalrun itself may put beside tasks, unless it holds a task file


def is_task_folder(path: Path) -> bool:
    """Whether a folder of a suite is one of its tasks: not a dot- or `_` folder (`.git`,
    `__pycache__`), not empty, and not `runs/` unless a task file says it is one."""
    if not path.is_dir() or path.name.startswith((".", "_")):
        return False
    if (path / TASK_FILE).is_file() or (path / HARBOR_TASK_FILE).is_file():
        return True
    return path.name not in NOT_TASKS and any(path.iterdir())


@dataclass(frozen=True)
class Unloadable:
    """A task folder that could not be loaded: which file, which key (if one), and why."""

    folder: Path
    path: Path
    field: str | None
    reason: str
    line: int | None = None
    column: int | None = None

    @classmethod
    def of(cls, folder: Path, error: TaskFormatError) -> Unloadable:
        return cls(folder, error.path, error.field, error.reason, error.line, error.column)

    @property
    def task_id(self) -> str:
        return self.folder.name

    def error(self) -> TaskFormatError:
        return TaskFormatError(
            self.path, self.reason, self.field, line=self.line, column=self.column
        )

    def describe(self) -> str:
        """`<file>[:<line>[:<column>]]: field '<key>': <reason>`, as the error said it."""
        return str(self.error())


@dataclass(frozen=True)
class Suite:
    """A tasks_dir, loaded as far as it goes: the tasks, the folders that could not load, and
    what the loaders want said once (e.g. keys a foreign format's runner ignores)."""

    tasks_dir: Path
    tasks: list[Task]
    unloadable: list[Unloadable] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    source: TasksSource | None = None  # a suite given by reference (`evalrun.tasks.remote`)


def scan_suite(
    tasks_dir: Path,
    *,
    reward_threshold: float = EvalConfig.reward_threshold,
    strict: bool = False,
    verifier_hardening: bool = EvalConfig.verifier_hardening,
) -> Suite:
    """Load every task folder directly below `tasks_dir`, sorted by id (the options as
    `load_task` takes them); a folder that cannot load is kept as `Unloadable`, never raised.
    Raises `TaskFormatError` only for the suite as a whole: no such folder, no task folder in
    it, or two folders with one id."""
    tasks_dir = Path(tasks_dir)
    if not tasks_dir.is_dir():
        raise TaskFormatError(tasks_dir, "tasks_dir is not a directory")
    if not (reward_threshold > 0 and reward_threshold < float("inf")):
        raise bad_value("reward_threshold", "a positive number", reward_threshold)
    suite = Suite(tasks_dir, [])
    seen: dict[str, Path] = {}
    folders = sorted(p for p in tasks_dir.iterdir() if is_task_folder(p))
    screen_scripts(folders)
    for folder in folders:
        try:
            task = load_task(
                folder,
                reward_threshold=reward_threshold,
                strict=strict,
                verifier_hardening=verifier_hardening,
            )
        except TaskFormatError as exc:
            suite.unloadable.append(Unloadable.of(folder, exc))
            continue
        if task.id in seen:
            raise TaskFormatError(
                task.layout.task_file, f"duplicate id {task.id!r} (also in {seen[task.id]})", "id"
            )
        seen[task.id] = folder
        suite.tasks.append(task)
        suite.warnings.extend(task.format.warnings)
    if not suite.tasks and not suite.unloadable:
        raise TaskFormatError(
            tasks_dir,
            "no task folders found (expected NNN-slug/task.yaml or <name>/task.toml folders)",
        )
    return suite


def screen_scripts(folders: Sequence[Path]) -> None:
    """Parse every shell script the folders' formats check at load in one bash process, before
    they load one by one: a `bash -n` each would be a process per script at every start-up
    (see `evalrun.tasks.lint`). A folder of neither format is left to `load_task` to refuse."""
    scripts: list[Path] = []
    for folder in folders:
        if (folder / TASK_FILE).is_file():
            scripts += native.shell_scripts(TaskLayout(folder))
        elif (folder / HARBOR_TASK_FILE).is_file():
            from evalrun.tasks.harbor import loading as harbor

            scripts += harbor.test_scripts(harbor.HarborLayout(folder))
    lint.screen(scripts)


def load_suite(
    tasks_dir: Path, *, reward_threshold: float = EvalConfig.reward_threshold, strict: bool = False
) -> list[Task]:
    """Every task below `tasks_dir`, all or nothing: the first folder that cannot load raises
    its `TaskFormatError` (for tools and tests that need the whole suite)."""
    suite = scan_suite(tasks_dir, reward_threshold=reward_threshold, strict=strict)
    if suite.unloadable:
        raise suite.unloadable[0].error()
    return suite.tasks


def runnable_on(
    tasks: list[Task], backend: SandboxBackend, *, explicit: bool
) -> tuple[list[Task], list[tuple[str, str]]]:
    """Split `tasks` into those `backend` can run and (id, reason) for the rest.

    Tasks the user named explicitly (`explicit`, i.e. `ids=`) are refused with a `UsageError`
    instead of skipped; so is a selection of which nothing can run.
    """
    reasons = [(task, task.format.cannot_run_on(backend)) for task in tasks]
    kept = [task for task, reason in reasons if reason is None]
    skipped = [(task.id, reason) for task, reason in reasons if reason is not None]
    if skipped and (explicit or not kept):
        lines = "\n".join(f"  {task_id}: {reason}" for task_id, reason in skipped)
        raise UsageError(f"cannot run on sandbox={backend.name}:\n{lines}")
    return kept, skipped


def unenforced_limits(tasks: Sequence[Task], backend: SandboxBackend) -> list[str]:
    """One line per task limit (`cpus`, `memory_mb`, `storage_mb`, `allowed_hosts`) that some of
    `tasks` set and `backend` does not enforce (`SandboxBackend.task_limits`): their samples get
    the backend's own limits instead, which a user should know before trusting a result."""
    asked: dict[str, list[str]] = {}
    for task in tasks:
        for name in task.format.sandbox_spec.limits_asked():
            if name not in backend.task_limits:
                asked.setdefault(name, []).append(task.id)
    lines = []
    for name, ids in asked.items():
        shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
        lines.append(f"{name} of {len(ids)} task(s) ({shown})")
    return lines
