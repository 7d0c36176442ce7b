"""Every exit status is defined once (`evalrun.errors.ExitCode`), said once (`MEANING`, which
`evalrun --help` lists), and no command returns a bare number instead."""

from __future__ import annotations

import ast
import signal
import subprocess
import sys

from evalrun.errors import MEANING, ExitCode, UsageError
from evalrun.run.engine import STOP_SIGNALS
from tests.conftest import REPO

# Functions whose int result is an exit status: the commands and what they return through.
STATUS_MODULES = [
    *sorted((REPO / "evalrun" / "cli").rglob("*.py")),
    REPO / "evalrun" / "run" / "runner.py",
    REPO / "evalrun" / "run" / "regrade.py",
    REPO / "evalrun" / "honesty" / "probes.py",
    REPO / "evalrun" / "integrations" / "opik" / "online.py",
    REPO / "evalrun" / "analysis" / "gate.py",
]


def test_each_status_is_said_once_and_distinct():
    assert set(MEANING) == set(ExitCode)
    assert len({int(code) for code in ExitCode}) == len(ExitCode)
    assert UsageError("x").exit_code == ExitCode.USAGE


def test_stop_signals_exit_with_128_plus_the_signal_number():
    assert {signum: int(code) for signum, code in STOP_SIGNALS.items()} == {
        signal.SIGINT: 130,
        signal.SIGTERM: 143,
        signal.SIGHUP: 129,
    }


def test_no_module_defines_an_exit_status_of_its_own():
    own = []
    for path in (REPO / "evalrun").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                own += [f"{path.name}: {n}" for n in names if n.startswith("EXIT")]
    assert own == []


def test_commands_return_exit_codes_not_numbers():
    bare = []
    for path in STATUS_MODULES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if not (isinstance(func.returns, ast.Name) and func.returns.id == "int"):
                continue
            for node in ast.walk(func):
                value = node.value if isinstance(node, ast.Return) else None
                if isinstance(value, ast.Constant) and isinstance(value.value, int):
                    bare.append(f"{path.relative_to(REPO)}:{node.lineno} {func.name}")
    assert bare == []


def test_help_lists_every_exit_code(tmp_path):
    shown = subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert shown.returncode == 0, shown.stderr
    listed = shown.stdout.split("== Exit codes ==", 1)[1].splitlines()[1:]
    assert [int(line.split()[0]) for line in listed] == [int(code) for code in ExitCode]
