"""Harbor's multi-step tasks: ordered turns in one sandbox, each with its own instruction, files,
tests and solution, their rewards rolled up into the task's by its declared strategy.

```
task-name/
  task.toml            multi_step_reward_strategy; [[steps]] name, [steps.agent],
                       [steps.verifier], min_reward, [steps.healthcheck]
  environment/         the one workspace every turn works in (see `harbor`)
  tests/               shared helpers and a fallback test.sh, under every step's own tests/
  steps/<name>/
    instruction.md     the turn's prompt (required)
    workdir/           copied into the workspace before the turn; its setup.sh runs, then goes
    tests/             the turn's verifier: its test.sh, else the task's tests/test.sh
    solution/solve.sh  the turn's gold solution (else the task's solution/)
```

As Harbor runs them (`harbor.trial.multi_step`): the steps run in order in the same workspace;
before each the step's workdir/ arrives (and its setup.sh and healthcheck run), the agent gets
the step's instruction with the step's timeout, then the step's tests run and leave a reward.
A step whose reward misses its `min_reward` (a number gates `reward`; a table gates each named
key), or whose verifier could not give a reward, ends the task there. The task's reward is the
per-key mean over the steps that ran (`mean`, the default; a key a step lacks counts 0) or the
last step's (`final`); it passes at the run's `reward_threshold`. Each step's reward is kept as
the score `step:<name>`. Where evalrun's rules are stricter than Harbor's: a step that left no
usable reward makes the whole sample a `fail` with that reason (never a silent 0, and never an
uncounted `error`: the agent could have caused it), and the step's setup.sh is removed after it
runs, as the task's environment/setup.sh is. Between turns the agent's processes are ended
before each grading and the sandbox is handed back to the agent after it (`Sandbox.begin_agent`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from evalrun.errors import TaskFormatError
from evalrun.models.records import AgentResult, Outcome
from evalrun.sandbox.base import Sandbox, SandboxBackend
from evalrun.tasks.base import FormatDefaults, Step, Verdict
from evalrun.tasks.harbor.task import (
    CONTAINER_TESTS_DIR,
    SOLVE_SCRIPT,
    TEST_SCRIPT,
    HarborFormat,
    HarborLayout,
    Verifier,
    healthcheck,
    populate,
    read_instruction,
    run_solution,
    task_spec,
)
from evalrun.tasks.harbor.toml import StepTable, fill_templates


def load_steps(parent: HarborFormat) -> HarborSteps:
    """The steps of a task whose task.toml has `[[steps]]`; `TaskFormatError` names what is
    missing (a step folder, its instruction, a test.sh for it)."""
    layout, config = parent.layout, parent.config
    steps = []
    for table in config.steps or ():
        folder = layout.step_dir(table.name)
        if not folder.is_dir():
            raise TaskFormatError(folder, f"missing: step {table.name!r} needs steps/{table.name}/")
        if not (folder / "tests" / TEST_SCRIPT).is_file() and not layout.test_script.is_file():
            raise TaskFormatError(
                folder / "tests" / TEST_SCRIPT,
                f"missing: step {table.name!r} needs a test.sh here or in the task's tests/",
            )
        prompt = read_instruction(folder / "instruction.md")
        timeout = table.agent.timeout_sec or config.agent.timeout_sec
        spec = task_spec(config, layout.root.name, prompt, timeout)
        env = fill_templates(
            table.verifier.env, layout.task_file, f"steps.{table.name}.verifier.env"
        )
        fmt = HarborStepFormat(parent, table, folder, {**parent.verifier_env, **env})
        steps.append(Step(name=table.name, spec=spec, format=fmt))
    return HarborSteps(tuple(steps), config.multi_step_reward_strategy or "mean", parent)


@dataclass(frozen=True)
class HarborStepFormat(FormatDefaults):
    """One step as a `TaskFormat`: it prepares, solves and grades that turn only (in the sample's
    sandbox, which is the task's)."""

    parent: HarborFormat
    table: StepTable
    folder: Path
    verifier_env: Mapping[str, str]
    name: str = "harbor"

    @property
    def layout(self) -> HarborLayout:
        return self.parent.layout

    def cannot_run_on(self, backend: SandboxBackend) -> str | None:
        return self.parent.cannot_run_on(backend)

    def setup_dirs(self) -> list[Path]:
        return [self.folder / "workdir"]

    def hidden_paths(self) -> list[str]:
        own = self.folder / "tests"
        files = sorted(p.relative_to(own).as_posix() for p in own.rglob("*") if p.is_file())
        mine = [f"tests/{f}" for f in files] + [f"{CONTAINER_TESTS_DIR}/{f}" for f in files]
        return self.parent.hidden_paths() + mine

    async def prepare(self, sandbox: Sandbox, timeout_s: float) -> str:
        log = ""
        workdir = self.folder / "workdir"
        if workdir.is_dir():
            log = await populate(sandbox, workdir, timeout_s)
        if self.table.healthcheck:
            log += await healthcheck(sandbox, self.table.healthcheck)
        return log

    async def solve(self, sandbox: Sandbox) -> AgentResult:
        own = self.folder / "solution"
        folder = own if (own / SOLVE_SCRIPT).is_file() else self.parent.layout.solution_dir
        return await run_solution(sandbox, folder, self.parent.solution_env)

    async def grade(self, sandbox: Sandbox, answer: str, timeout_s: float) -> Verdict:
        stale = ["tests", *([CONTAINER_TESTS_DIR] if sandbox.is_container else [])]
        await sandbox.exec(["rm", "-rf", "--", *stale], timeout_s=60)  # an earlier step's tests
        tests = [d for d in (self.parent.layout.tests_dir, self.folder / "tests") if d.is_dir()]
        verifier = Verifier(
            tuple(tests),
            self.table.verifier.timeout_sec or self.parent.config.verifier.timeout_sec,
            self.verifier_env,
            self.table.verifier.user or self.parent.config.verifier.user,
        )
        return await self.parent.run_verifier(sandbox, verifier, timeout_s)


def _rewards(verdict: Verdict) -> dict[str, float]:
    """A step verdict's rewards by Harbor's key: `reward`, and `reward.<key>` as `<key>`."""
    return {
        ("reward" if name == "reward" else name.removeprefix("reward.")): value
        for name, value in verdict.scores.items()
        if name == "reward" or name.startswith("reward.")
    }


@dataclass(frozen=True)
class HarborSteps:
    """The `StepPlan` of a multi-step Harbor task (see the module docstring)."""

    steps: tuple[Step, ...]
    strategy: str  # "mean" | "final"
    parent: HarborFormat

    def stop_reason(self, step: Step, verdict: Verdict) -> str | None:
        if "reward" not in verdict.scores:
            return f"step {step.name!r} ended without a reward"
        gate = step.format.table.min_reward  # type: ignore[attr-defined]
        if gate is None:
            return None
        rewards = _rewards(verdict)
        thresholds = {"reward": gate} if isinstance(gate, int | float) else gate
        for key, threshold in thresholds.items():
            got = rewards.get(key, float("-inf"))
            if got < threshold:
                return f"step {step.name!r}: {key} {got:g} < min_reward {threshold:g}"
        return None

    def combine(self, graded: Sequence[tuple[Step, Verdict]]) -> Verdict:
        outputs = "\n".join(f"--- step {s.name} ---\n{v.output}" for s, v in graded)
        took = sum(v.duration_s for _, v in graded)
        last_step, last = graded[-1]
        step_scores = {
            f"step:{s.name}": v.scores["reward"] for s, v in graded if "reward" in v.scores
        }
        for step, verdict in graded:
            if "reward" not in verdict.scores:  # no reward: that step's verdict is the task's
                reason = f"step {step.name!r}: {verdict.reason}"
                return replace(
                    verdict, reason=reason, output=outputs, duration_s=took, scores=step_scores
                )
        per_step = [_rewards(v) for _, v in graded]
        if self.strategy == "final":
            rewards = per_step[-1]
        else:
            keys = {k for r in per_step for k in r}
            rewards = {k: sum(r.get(k, 0.0) for r in per_step) / len(per_step) for k in keys}
        scores = {("reward" if k == "reward" else f"reward.{k}"): v for k, v in rewards.items()}
        reward = rewards["reward"]
        verdict = self.parent.verdict_for(
            reward, {**scores, **step_scores}, outputs, last.exit_code, took
        )
        if verdict.outcome is Outcome.passed:
            return verdict
        shown = ", ".join(f"{s.name} {v.scores['reward']:g}" for s, v in graded)
        ran = "" if len(graded) == len(self.steps) else f" (stopped after {last_step.name!r})"
        failed = [f"{s.name}: {v.reason}" for s, v in graded if v.outcome is Outcome.failed]
        reason = (
            f"reward {reward:g} ({self.strategy} of steps: {shown}){ran} < threshold "
            f"{self.parent.reward_threshold:g}" + (f"; {failed[0]}" if failed else "")
        )
        return Verdict(Outcome.failed, reason, last.exit_code, outputs, took, scores=verdict.scores)
