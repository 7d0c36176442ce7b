"""What README.md tells a user stays true to the tool.

Each test reads the README as a user would and checks one kind of claim against the code: the
two set-up commands it opens with, every subcommand it names, every command line it shows (each
composes), every config group option (each exists, and the group table lists them all), the
exit-code table (exactly the codes in `ExitCode`), every error message it quotes (the tool prints
exactly that), and every relative link in the README and the pages under docs/ and bench/.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from evalrun.cli.hydra import compose_config
from evalrun.cli.main import COMMANDS
from evalrun.errors import ExitCode
from tests.conftest import REPO

README = REPO / "README.md"
CONF = REPO / "conf"
PROJECT_TEMPLATE_CONF = REPO / "evalrun" / "cli" / "scaffold" / "templates" / "project" / "conf"
LINKED_PAGES = [README, *sorted((REPO / "docs").glob("*.md")), REPO / "bench" / "README.md"]
GROUPS = sorted(p.name for p in CONF.iterdir() if p.is_dir() and not p.name.startswith("_"))

OPENING = [
    "bash scripts/bootstrap.sh && .venv/bin/evalrun",
    "bash scripts/test.sh",
]


def _text() -> str:
    return README.read_text(encoding="utf-8")


def _code_blocks(text: str) -> list[list[str]]:
    """The lines of each fenced code block, in order."""
    return [block.splitlines() for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)]


def _inline_code(text: str) -> list[str]:
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.findall(r"`([^`\n]+)`", prose)


def _command_lines() -> list[str]:
    """Every `evalrun ...` command the README shows, without its prompt and trailing comment."""
    lines = []
    for block in _code_blocks(_text()):
        for line in block:
            line = re.sub(r"\s#\s.*$", "", line.removeprefix("$ ")).strip()
            if line.startswith("evalrun"):
                lines.append(line)
    return lines


def _options(folder: Path, group: str) -> set[str]:
    where = folder / group
    return {p.stem for p in where.glob("*.yaml")} if where.is_dir() else set()


def test_the_readme_opens_with_the_two_set_up_commands():
    first = _code_blocks(_text())[0]
    assert [line.split("#")[0].strip() for line in first] == OPENING
    assert (REPO / "scripts" / "bootstrap.sh").is_file()
    assert (REPO / "scripts" / "test.sh").is_file()
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/test.sh" in ci.splitlines()


def test_every_subcommand_named_exists():
    mistakes = {command for command, _ in _quoted_errors()}
    named = set()
    for snippet in [*_inline_code(_text()), *_command_lines()]:
        if snippet not in mistakes:
            named |= set(re.findall(r"(?:^|[\s(])evalrun ([a-z][a-z_-]*)(?=\s|$|[`)])", snippet))
    assert {"check", "diff", "gate", "init", "new-task"} <= named
    assert sorted(named - set(COMMANDS)) == []


def test_every_group_option_named_exists():
    text = _text()
    unknown = []
    for group in GROUPS:
        known = _options(CONF, group) | _options(PROJECT_TEMPLATE_CONF, group)
        for values in re.findall(rf"(?<![\w.+/]){group}=([\w,]+)", text):
            unknown += [f"{group}={v}" for v in values.split(",") if v and v not in known]
    # the one deliberate mistake, shown with the error it gets
    assert set(unknown) == {"sandbox=dokcer"}


def test_the_group_table_lists_every_option_default_first():
    rows = {}
    for line in _text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].strip("`") in GROUPS:
            rows[cells[0].strip("`")] = re.findall(r"`([\w]+)`", cells[1])
    assert sorted(rows) == GROUPS
    defaults = {}
    for entry in yaml.safe_load((CONF / "config.yaml").read_text(encoding="utf-8"))["defaults"]:
        if isinstance(entry, dict):
            defaults.update({k: v for k, v in entry.items() if k in GROUPS})
    schemas = {"profile_schema"}  # typed schemas options build on, never options themselves
    for group, listed in rows.items():
        shipped = {o for o in _options(CONF, group) if not o.endswith("_schema")} - schemas
        assert sorted(listed) == sorted(shipped), group
        assert listed[0] == defaults[group], group


def _composable(line: str) -> list[list[str]]:
    """The override lists a README run line stands for: `-m a=x,y` is one list per value."""
    args = shlex.split(line, comments=True)[1:]
    if args and args[0] == "--cfg":
        args = args[2:]
    elif args and args[0].startswith("--"):  # --version, --help: nothing to compose
        return []
    if not args:
        return [[]]
    if args[0] in COMMANDS or any("<" in a or a.startswith("resume=") for a in args):
        return []
    sweep = args[0] == "-m"
    args = [a for a in args if a != "-m" and not a.startswith("hydra/")]
    if not sweep:
        return [args]
    choices = [a.split("=", 1)[0] + "=" + v for a in args for v in a.split("=", 1)[1].split(",")]
    by_key = itertools.groupby(choices, key=lambda a: a.split("=", 1)[0])
    return [list(combo) for combo in itertools.product(*[list(g) for _, g in by_key])]


def test_every_run_line_composes(tmp_path, monkeypatch):
    # in a project made by `evalrun init`, as the README's lines about my_agent assume
    made = subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", "init", "my-evals"],
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": str(REPO),
        },  # this checkout's evalrun, whatever is installed
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    monkeypatch.chdir(tmp_path / "my-evals")
    mistakes = {command for command, _ in _quoted_errors()}
    composed = 0
    for line in _command_lines():
        if line in mistakes:
            continue
        for overrides in _composable(line):
            compose_config(overrides)
            composed += 1
    assert composed >= 10


def test_the_exit_code_table_is_exactly_exit_code():
    text = _text()
    section = text[text.index("### Exit codes") :]
    section = section[: section.index("\n## ")]
    listed = [int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)]
    assert sorted(listed) == sorted(int(code) for code in ExitCode)
    assert listed == sorted(listed)


def _quoted_errors() -> list[tuple[str, list[str]]]:
    """(command, the lines the README says it prints) for every `$ evalrun` shown with an error."""
    quoted = []
    for block in _code_blocks(_text()):
        for i, line in enumerate(block):
            if line.startswith("$ evalrun") and i + 1 < len(block):
                said = list(itertools.takewhile(lambda s: not s.startswith("$ "), block[i + 1 :]))
                if said and said[0].startswith("error:"):
                    quoted.append((line[2:], said))
    return quoted


@pytest.mark.parametrize("command, said", _quoted_errors(), ids=lambda v: str(v)[:40])
def test_every_quoted_error_is_what_the_tool_prints(command, said, tmp_path):
    args = shlex.split(command)[1:]
    done = subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", *args],
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": str(REPO),
        },  # this checkout's evalrun, whatever is installed
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == ExitCode.USAGE
    assert done.stderr.strip().splitlines() == said


def test_the_readme_quotes_errors():
    assert len(_quoted_errors()) >= 3


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(page):
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists() or (
            anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved)
        ):
            broken.append(target)
    assert broken == []


def test_every_docs_page_is_reachable_from_the_readme():
    text = _text()
    pages = sorted(p.name for p in (REPO / "docs").glob("*.md"))
    assert [name for name in pages if f"docs/{name}" not in text] == []


# --- every output the README shows is what the tool prints ---------------------------------------

SHOWN_ROOT = "/tmp/tmp.eOFI8Pelqy"  # the folder the README's outputs were made in


def _shown_outputs() -> list[tuple[str, list[str], int | None]]:
    """(command, the lines the README says it prints, the exit code `echo $?` shows or None) for
    every `$ evalrun` shown with output that is not an error (those: `_quoted_errors`)."""
    shown = []
    for block in _code_blocks(_text()):
        if any(line.startswith("$ evalrun tasks_dir=git+") for line in block):
            continue  # a suite by reference needs its repository: tests/tasks/test_remote.py
            # checks the lines that session shows (the commit at the run's end, diff's suite line)
        for i, line in enumerate(block):
            if not line.startswith("$ evalrun"):
                continue
            said = list(itertools.takewhile(lambda s: not s.startswith("$ "), block[i + 1 :]))
            rest = block[i + 1 + len(said) :]
            code = int(rest[1]) if len(rest) > 1 and rest[0] == "$ echo $?" else None
            if said and not said[0].startswith("error:"):
                shown.append((line[2:], said, code))
    return shown


def _normalised(text: str) -> list[str]:
    """What differs from run to run made the same: timings, run stamps; column padding (which
    follows the widest cell) and blank lines."""
    lines = []
    for line in text.splitlines():
        line = re.sub(r"\d{8}-\d{6}", "<stamp>", line)
        line = re.sub(r"\(\d+\.\ds\)", "(N s)", line)
        if line.startswith("latency s (mean/p50/p95)"):
            line = re.sub(r"[\d.]+/[\d.]+/[\d.]+", "N/N/N", line)
        line = re.sub(r"│\s*\d+\.\d+ │$", "│ N │", line)  # a task's latency, the last column
        line = re.sub(
            r"│\s*\d+\.\d{3}\s*(│\s*(?:ok|broken)\b[^│]*│)$", r"│ N \1", line
        )  # p95_agent_s
        lines.append(re.sub(r"\s+", " ", line).strip())
    return [line for line in lines if line]


def _pattern(said: list[str]) -> re.Pattern[str]:
    """The README's lines as a pattern: a line `...` stands for any lines, a line ending in
    `...` for any line it begins."""
    parts = []
    for line in _normalised("\n".join(said)):
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        elif line.endswith("..."):
            parts.append(re.escape(line[:-3]) + r"[^\n]*\n")
        else:
            parts.append(re.escape(line) + r"\n")
    return re.compile("".join(parts))


def _evalrun(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "80", "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )


def _prepare(command: str, root: Path) -> Path:
    """What the README did before `command`, in `root`; the folder the command runs in."""
    if command == "evalrun check":  # in the project of "Your own tasks", right after new-task
        assert _evalrun(["init", "my-evals"], root).returncode == 0
        assert _evalrun(["new-task", "002-parse-dates"], root / "my-evals").returncode == 0
        return root / "my-evals"
    if command == "evalrun tasks_dir=suite":  # a good task beside one with three mistakes
        for task in ("001-fizzbuzz-off-by-one", "002-factorial-missing-return"):
            shutil.copytree(REPO / "tasks" / task, root / "suite" / task)
        task_file = root / "suite" / "002-factorial-missing-return" / "task.yaml"
        text = task_file.read_text(encoding="utf-8")
        for right, wrong in [
            ("max_steps:", "max_step:"),
            ("easy", "hrad"),
            ("[python, bugfix]", "python"),
        ]:
            text = text.replace(right, wrong)
        task_file.write_text(text, encoding="utf-8")
    if command == "evalrun regrade latest":  # a run graded by a buggy verifier, then fixed
        for task in (
            "001-fizzbuzz-off-by-one",
            "002-factorial-missing-return",
            "003-error-message-typo",
        ):
            shutil.copytree(REPO / "tasks" / task, root / "regrade-suite" / task)
        verify = root / "regrade-suite" / "002-factorial-missing-return" / "verify" / "verify.sh"
        fixed = verify.read_text(encoding="utf-8")
        verify.write_text(fixed.replace("exec python3", "false && exec python3"), encoding="utf-8")
        assert _evalrun(["tasks_dir=regrade-suite", "trials=2"], root).returncode == 0
        verify.write_text(fixed, encoding="utf-8")
    if command.startswith("evalrun diff"):  # the gold agent's run beside the noop run above
        assert _evalrun(["agent=oracle", "limit=4", "name=oracle"], root).returncode == 0
    return root


def _with_runs(command: str, root: Path) -> list[str]:
    """`command`'s arguments, each `runs/<stamp>-<name>` the README shows made the newest run
    of that name in `root`."""

    def newest(match: re.Match[str]) -> str:
        runs = sorted((root / "runs").glob(f"*-{match.group(1)}"))
        assert runs, f"no run named {match.group(1)} in {root}"
        return f"runs/{runs[-1].name}"

    return [re.sub(r"runs/\d{8}-\d{6}-(\w+)", newest, a) for a in shlex.split(command)[1:]]


@pytest.mark.slow
def test_every_output_the_readme_shows_is_what_the_tool_prints():
    """Each `$ evalrun ...` the README shows with its output, run in README order in one folder as
    the README did (sandbox=local): the output matches, timings and stamps aside; `...` abridges.
    A mismatch prints the tool's whole output, ready to paste."""
    shown = _shown_outputs()
    assert [re.sub(r"\d{8}-\d{6}", "<stamp>", command) for command, _, _ in shown] == [
        "evalrun",
        "evalrun agent=noop limit=4 name=noop",
        "evalrun check",
        "evalrun tasks_dir=suite",
        "evalrun diff runs/<stamp>-oracle runs/<stamp>-noop",
        "evalrun regrade latest",
        "evalrun gate runs/<stamp>-noop 'profile.floors={pass@1: 0.8}'",
        "evalrun -m agent=oracle,noop limit=3",
    ]  # each run here as the README did it (`_prepare`): a new one needs its preparation
    root = Path(tempfile.mkdtemp(prefix="tmp.", suffix="xx", dir="/tmp"))  # as long as SHOWN_ROOT
    stale = []
    try:
        for command, said, code in shown:
            cwd = _prepare(command, root)
            done = _evalrun(_with_runs(command, root), cwd)
            printed = done.stdout.replace(str(root), SHOWN_ROOT)
            matches = _pattern(said).fullmatch("\n".join(_normalised(printed)) + "\n")
            if not matches or (code is not None and done.returncode != code):
                stale.append(f"$ {command}  (exit {done.returncode})\n{printed}")
    finally:
        shutil.rmtree(root)
    assert stale == [], "README outputs that the tool no longer prints:\n" + "\n".join(stale)
