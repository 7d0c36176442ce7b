"""A real finished run to report on: 4 tasks x 3 trials through the real runner and oracle agent.

- 001-pass   always passes
- 002-flaky  its solve.sh keeps a counter outside the workspace and solves only on even calls:
             with concurrency=1 trials 0 and 2 pass, trial 1 fails (2/3, flaky)
- 003-fail   the gold overlay is wrong: always fails; verify prints ANSI colour and a control byte
- 004-error  setup.sh exits 3: a harness error on every trial (kept out of pass rates)
Agent and verify output carry HTML, so the reports' escaping is exercised by real data.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from evalrun.cli.hydra import compose_config
from evalrun.run.runner import run

HOSTILE = "<img src=x onerror=alert(1)><script>alert(2)</script>"


def make_suite(make_task, counter: Path) -> Path:
    make_task("001-pass")
    make_task(
        "002-flaky",
        spec={"difficulty": "medium", "tags": ["demo", "git"]},
        files={
            "solution/solve.sh": (
                f"n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}\n"
                "if [ $((n % 2)) -eq 0 ]; then echo 42 > answer.txt; echo 'wrote <b>42</b>';\n"
                f"else echo 'gave up {HOSTILE}'; fi\n"
            ),
            "verify/verify.sh": (
                'if [ "$(cat answer.txt 2>/dev/null)" = "42" ]; then echo PASS; exit 0; fi\n'
                f"echo 'FAIL: answer.txt does not contain 42 {HOSTILE}'; exit 1\n"
            ),
        },
        drop=("solution/answer.txt",),
    )
    make_task(
        "003-fail",
        spec={"difficulty": "hard", "tags": ["files"]},
        files={
            "solution/answer.txt": "41",
            "verify/verify.sh": "printf 'FAIL: wrong answer \\033[31mred\\033[0m \\001 end\\n'; exit 1\n",
        },
    )
    return make_task(
        "004-error", spec={"tags": ["files"]}, files={"setup/setup.sh": "echo boom >&2; exit 3\n"}
    ).parent


def run_suite(suite: Path, run_dir: Path, *overrides: str) -> Path:
    # The suite has a task that always errors (to show errors in reports): allow them.
    args = [f"tasks_dir={suite}", f"run_dir={run_dir}", "concurrency=1", "max_retries=0"]
    args += ["max_errors=1000", *overrides]
    code = run(compose_config(args), Console(file=io.StringIO(), width=160), overrides=args)
    assert code == 0
    return run_dir


@pytest.fixture
def suite(make_task, tmp_path) -> Path:
    return make_suite(make_task, tmp_path / "counter")


@pytest.fixture
def run_dir(suite, tmp_path) -> Path:
    """The finished run directory (trials=3), written by the real runner."""
    return run_suite(suite, tmp_path / "runs" / "20250101-000000-eval", "trials=3")
