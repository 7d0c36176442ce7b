"""`agent=python`: a team's own agent loaded from `module:callable`, run on a real task."""

from __future__ import annotations

import re

import pytest

from evalrun.agents.python import PythonAgent
from evalrun.errors import UsageError
from tests.agents.conftest import FIXTURES, evalrun_cli, run_eval

TYPO = "003-error-message-typo"


@pytest.fixture(autouse=True)
def importable_fixtures(monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURES))


def python_agent(factory: str, *extra: str) -> list[str]:
    return ["agent=python", f"agent.factory={factory}", *extra]


def test_a_factory_agent_that_fixes_the_task_passes(real_suite, tmp_path):
    rec = run_eval(real_suite(TYPO), tmp_path / "run", *python_agent("team_agent:make_agent")).only
    assert rec.outcome == "pass", rec.reason
    assert rec.agent.output == "Replaced 2 typos."
    assert [(s.name, s.result) for s in rec.agent.trajectory] == [("replace", "2 replaced")]


def test_kwargs_reach_the_factory(real_suite, tmp_path):
    overrides = python_agent("team_agent:make_agent", "+agent.kwargs.fix=Invalidd")
    rec = run_eval(real_suite(TYPO), tmp_path / "run", *overrides).only
    assert rec.outcome == "fail"


def test_a_class_works_as_factory_and_a_string_result_is_the_answer(real_suite, tmp_path):
    rec = run_eval(real_suite(TYPO), tmp_path / "run", *python_agent("team_agent:Answerer")).only
    assert rec.agent.output == "just a string"
    assert rec.outcome == "fail"


def test_an_agent_that_raises_is_recorded_graded_and_said_in_the_terminal(real_suite, tmp_path):
    done = run_eval(real_suite(TYPO), tmp_path / "run", *python_agent("team_agent:Crasher"))
    rec = done.only
    assert rec.outcome == "fail"
    assert rec.agent.error == "RuntimeError: model client exploded"
    # the terminal says why, agent first: its crash is why the verifier failed
    lines = [" ".join(line.split()) for line in done.console.splitlines()]
    why = lines[lines.index("Why (1 failed):") + 1]
    assert why.startswith(
        f"fail {TYPO} #0 agent: RuntimeError: model client exploded → FAIL: no 'Invlaid' may"
    )


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        ("team_agent.make_agent", "expected 'package.module:callable'"),
        ("no_such_team_module:make", "no module named 'no_such_team_module'"),
        ("team_agent:make_agnet", "has no attribute 'make_agnet'"),
        ("team_agent:NOT_CALLABLE", "NOT_CALLABLE is not callable"),
        ("team_agent:NoRun", "returned NoRun, which has no `async def run"),
        ("team_agent:SyncRun", "returned SyncRun, which has no `async def run"),
        ("team_agent:needs_an_argument", "calling it with agent.kwargs={} failed: TypeError"),
        ("team_agent:PreflightFails", "preflight() failed: RuntimeError: MY_AGENT_TOKEN"),
    ],
)
def test_a_bad_factory_is_a_usage_error_naming_it(factory, message):
    with pytest.raises(UsageError) as caught:
        PythonAgent(factory=factory).preflight()
    assert repr(factory) in str(caught.value)  # the message names the factory string
    assert message in str(caught.value)


def test_a_missing_factory_says_how_to_set_it():
    with pytest.raises(UsageError, match=re.escape("agent.factory=my_pkg.my_module:make_agent")):
        PythonAgent().preflight()


def test_the_cli_imports_a_module_from_the_current_directory(real_suite, tmp_path):
    suite = real_suite(TYPO)
    run_dir = tmp_path / "run"
    proc = evalrun_cli(
        *python_agent("team_agent:make_agent"),
        f"tasks_dir={suite}",
        f"run_dir={run_dir}",
        cwd=FIXTURES,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"outcome":"pass"' in (run_dir / "samples.jsonl").read_text()


def test_the_cli_refuses_a_bad_factory_with_exit_2_before_running(tmp_path):
    run_dir = tmp_path / "run"
    proc = evalrun_cli(*python_agent("team_agent:nope"), f"run_dir={run_dir}", cwd=FIXTURES)
    assert proc.returncode == 2
    assert "agent.factory='team_agent:nope'" in proc.stderr
    assert not run_dir.exists()
