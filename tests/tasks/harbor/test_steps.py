"""Harbor multi-step tasks: each step's instruction in turn in one workspace, each step graded after
it, a step's reward gating the rest, the task's reward by its declared strategy.

Runs on the local backend with the suite fixture's `multi-step` task (tests/fixtures/harbor-suite/)
and variants of it written here.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from evalrun.agents.noop import NoopAgent
from evalrun.agents.oracle import OracleAgent
from evalrun.errors import TaskFormatError
from evalrun.models.records import AgentResult, Outcome, SampleRecord
from evalrun.run.engine import run_sample
from evalrun.run.trial import Limits
from evalrun.sandbox.local import LocalBackend
from evalrun.tasks.loader import load_task
from tests.conftest import REPO

SUITE = REPO / "tests" / "fixtures" / "harbor-suite"
LIMITS = Limits(setup_s=30, agent_s=30, verify_s=30, max_retries=0)


def run(task, agent) -> SampleRecord:
    return asyncio.run(run_sample(task, 0, agent, LocalBackend(), LIMITS, "t"))


class FirstStepsOnly:
    """Solves the first `solved` steps with their gold solutions, then does nothing; records
    every prompt it was given."""

    name = "partial"

    def __init__(self, solved: int):
        self.solved = solved
        self.prompts: list[str] = []

    def preflight(self) -> None:
        return None

    async def run(self, task, sandbox) -> AgentResult:
        self.prompts.append(task.spec.prompt)
        if len(self.prompts) <= self.solved:
            return await task.format.solve(sandbox)
        return AgentResult(output="gave up")


@pytest.fixture
def multi_step(tmp_path) -> Path:
    folder = tmp_path / "multi-step"
    shutil.copytree(SUITE / "multi-step", folder)
    return folder


def test_the_gold_solution_passes_every_step_and_keeps_each_steps_reward(multi_step):
    rec = run(load_task(multi_step), OracleAgent())
    assert rec.outcome is Outcome.passed, rec.reason
    assert rec.scores == {"reward": 1.0, "step:scaffold": 1.0, "step:implement": 1.0}
    steps = [c.args["name"] for c in rec.agent.trajectory if c.name == "step"]
    assert steps == ["scaffold", "implement"]
    assert rec.agent.output == "implemented\n"  # the last step's final answer


def test_each_step_gets_its_own_instruction_in_the_same_workspace(multi_step):
    agent = FirstStepsOnly(solved=2)
    rec = run(load_task(multi_step), agent)
    assert rec.outcome is Outcome.passed, rec.reason
    assert agent.prompts[0].startswith("Create an executable script `src/greet.sh`")
    assert agent.prompts[1].startswith("Extend `src/greet.sh`")


def test_a_step_below_its_min_reward_ends_the_task_there(multi_step):
    agent = FirstStepsOnly(solved=0)
    rec = run(load_task(multi_step), agent)
    assert len(agent.prompts) == 1  # implement never ran: scaffold's min_reward is 1
    assert rec.outcome is Outcome.failed
    assert rec.scores == {"reward": 0.0, "step:scaffold": 0.0}
    assert rec.reason.startswith("reward 0 (mean of steps: scaffold 0) (stopped after 'scaffold')")
    assert "scaffold: reward 0 < threshold 1: FAIL: src/greet.sh is missing" in rec.reason


def test_the_mean_of_the_steps_decides_and_the_threshold_is_the_runs(multi_step):
    rec = run(load_task(multi_step), FirstStepsOnly(solved=1))
    assert rec.outcome is Outcome.failed
    assert rec.scores == {"reward": 0.5, "step:scaffold": 1.0, "step:implement": 0.0}
    lenient = load_task(multi_step, reward_threshold=0.5)
    assert run(lenient, FirstStepsOnly(solved=1)).outcome is Outcome.passed


def test_the_final_strategy_takes_the_last_steps_reward(multi_step):
    toml = multi_step / "task.toml"
    toml.write_text(toml.read_text().replace('"mean"', '"final"'))
    rec = run(load_task(multi_step), FirstStepsOnly(solved=1))
    assert (rec.outcome, rec.scores["reward"]) == (Outcome.failed, 0.0)


def test_step_files_arrive_before_the_step_and_setup_sh_is_gone(multi_step):
    class Looker(FirstStepsOnly):
        async def run(self, task, sandbox) -> AgentResult:
            listing = await sandbox.exec("ls -A . src", timeout_s=10)
            self.prompts.append(listing.stdout)
            return await task.format.solve(sandbox)

    agent = Looker(solved=2)
    assert run(load_task(multi_step), agent).outcome is Outcome.passed
    first, second = agent.prompts
    assert "setup.sh" not in first and "src" in first  # scaffold's setup.sh made src/, then went
    assert "names.txt" not in first and "names.txt" in second  # implement's workdir/ came later
    assert "tests" not in first  # no hidden tests before the first grading


def test_no_reward_from_a_step_is_a_fail_never_a_silent_zero(multi_step):
    """The step's test.sh ran in the agent's workspace: no reward is a fail with the reason,
    never an uncounted error the agent could cause."""
    (multi_step / "steps" / "implement" / "tests" / "test.sh").write_text("echo no reward\n")
    rec = run(load_task(multi_step), OracleAgent())
    assert rec.outcome is Outcome.failed
    assert rec.reason.startswith("step 'implement': tests/test.sh wrote no reward")


def test_a_later_steps_setup_failing_is_the_agents_failure(multi_step):
    """After the agent has acted, a step that cannot be prepared is the workspace's doing: a
    fail with the reason - never a harness error the agent could hide behind."""
    (multi_step / "steps" / "implement" / "workdir" / "setup.sh").write_text(
        "test -f README.md || { echo 'README.md is gone' >&2; exit 3; }\n"
    )

    class Vandal(FirstStepsOnly):
        async def run(self, task, sandbox) -> AgentResult:
            result = await task.format.solve(sandbox)
            await sandbox.exec("rm -f README.md", timeout_s=10)
            return result

    rec = run(load_task(multi_step), Vandal(solved=2))
    assert rec.outcome is Outcome.failed
    assert rec.scores == {"step:scaffold": 1.0}
    assert "preparing the step failed after earlier steps" in rec.reason
    assert "workdir/setup.sh failed (exit 3): README.md is gone" in rec.reason


@pytest.mark.parametrize(
    ("drop", "words"),
    [
        ("steps/implement", "step 'implement' needs steps/implement/"),
        ("steps/implement/instruction.md", "instruction.md: missing"),
    ],
)
def test_a_step_without_its_folder_or_instruction_cannot_load(multi_step, drop, words):
    target = multi_step / drop
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    with pytest.raises(TaskFormatError, match=words):
        load_task(multi_step)


def test_a_step_needs_a_test_sh_of_its_own_or_the_tasks(multi_step):
    (multi_step / "tests" / "test.sh").unlink()
    (multi_step / "steps" / "implement" / "tests" / "test.sh").unlink()
    with pytest.raises(TaskFormatError, match=r"step 'implement' needs a test\.sh here or in"):
        load_task(multi_step)


def test_no_instruction_md_at_the_top_is_fine_for_a_multi_step_task(multi_step):
    assert not (multi_step / "instruction.md").exists()
    task = load_task(multi_step)
    assert "## Step scaffold" in task.spec.prompt and "## Step implement" in task.spec.prompt
    assert run(task, NoopAgent()).outcome is Outcome.failed
