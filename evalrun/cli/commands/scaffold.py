"""`evalrun init [DIR]` and `evalrun new-task NAME`: write the scaffold (`evalrun.cli.scaffold`),
then say what is next."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from rich.console import Console

from evalrun.cli.arguments import CommandParser
from evalrun.cli.hydra import compose_config
from evalrun.cli.scaffold import init_project, new_task
from evalrun.errors import ExitCode

TASK_PARTS = (
    ("task.yaml", "the prompt (what the agent is asked), difficulty, tags"),
    ("setup/", "the files the agent starts from (setup.sh, optional, runs once after copying)"),
    ("verify/verify.sh", "the hidden check: must FAIL the untouched setup/ and PASS solution/"),
    ("solution/", "the gold fix, copied over setup/ (used by `evalrun check` and agent=oracle)"),
    ("wrong/near-miss/", "a plausible wrong fix verify.sh must FAIL (one folder per near miss)"),
)


def _shown(path: Path) -> str:
    """`path` relative to the current directory when it is below it, else absolute."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def init_command(args: list[str], console: Console) -> int:
    """`evalrun init [DIR]` (default: the current directory)."""
    parser = CommandParser("init", "A starter project: a config extending evalrun's, a task.")
    parser.add_argument(
        "target",
        metavar="DIR",
        nargs="?",
        type=Path,
        default=Path("."),
        help="where (default: the current directory)",
    )
    target = parser.parse(args).target.expanduser()
    written, kept = init_project(target)
    console.print(f"evalrun project in {target.resolve()!s}:", highlight=False)
    for path in written:
        console.print(f"  wrote {_shown(path)}", highlight=False)
    for path in kept:
        console.print(f"  kept  {_shown(path)} (yours; not overwritten)", highlight=False)
    steps = [
        ("evalrun", "tasks/ with agent=oracle (the gold solutions): pass@1 1.0"),
        ("evalrun check", "prove every task's verifier honest"),
        ("evalrun agent=my_agent", "your agent: set its cmd in conf/agent/my_agent.yaml"),
        ("evalrun new-task NAME", "a new task folder to fill in"),
        ("evalrun info", "where every config option comes from"),
    ]
    here = target.resolve() == Path.cwd().resolve()
    console.print("next:" if here else f"next, from there (cd {shlex.quote(str(target))}):")
    for command, what in steps:
        console.print(f"  {command:<24} {what}", highlight=False, markup=False)
    return ExitCode.OK


def new_task_command(args: list[str], console: Console) -> int:
    """`evalrun new-task NAME [overrides]`: the folder goes into the suite's tasks_dir (the
    project's tasks/, or `tasks_dir=`), else ./tasks."""
    from evalrun.run.plan import local_tasks_dir

    parser = CommandParser(
        "new-task",
        "A task folder to fill in, in the suite's tasks_dir (a project's tasks/, else ./tasks).",
        overrides=True,
        epilog="overrides: tasks_dir=DIR (where the folder goes), ...",
    )
    parser.add_argument("name", metavar="NAME", help="the task id and folder name")
    options = parser.parse(args)
    name, overrides = options.name, options.overrides
    configured = compose_config(overrides).tasks_dir
    tasks_dir = local_tasks_dir(configured, "new-task") if configured else Path("tasks").resolve()
    tasks_dir.mkdir(parents=True, exist_ok=True)
    folder = new_task(name, tasks_dir)
    console.print(f"created {_shown(folder)}/", highlight=False)
    for part, what in TASK_PARTS:
        console.print(f"  {part:<18} {what}", highlight=False, markup=False)
    default_dir = local_tasks_dir(compose_config([]).tasks_dir, "new-task")
    flag = "" if default_dir == tasks_dir else f" tasks_dir={shlex.quote(_shown(tasks_dir))}"
    console.print(
        "next: fill those in, then\n"
        f"  evalrun check{flag} ids=[{name}]    gold must pass, untouched and wrong/* must fail\n"
        "                      (it fails until verify/verify.sh is written: that is honest)\n"
        f"  evalrun{flag} ids=[{name}] agent=...   run an agent on it",
        highlight=False,
        markup=False,
    )
    return ExitCode.OK
