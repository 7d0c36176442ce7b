"""The Harbor / Terminal-Bench 2.x task format, mapped onto evalrun's `Task`.

```
task-name/
  task.toml            metadata, timeouts, environment, steps (see `harbor_toml`, `harbor_keys`)
  instruction.md       the prompt (a multi-step task may have none)
  environment/         a Dockerfile here: the task's own image (the folder is its build context);
                       no Dockerfile: the folder's files are the workspace, and its setup.sh
                       runs there first and is removed
  tests/test.sh        the hidden verifier (+ helpers); writes a reward into $VERIFIER_DIR
  solution/solve.sh    the gold solution, run from the workspace root
  steps/<name>/        a multi-step task's turns (see `harbor_steps`): instruction.md,
                       workdir/ (+ setup.sh), tests/, solution/
```

A sample's life: the workspace starts as environment/'s files, unless a Dockerfile makes the
image provide it (minus .dockerignore, and minus setup.sh once it ran); `[environment]
healthcheck` must then pass. The gold solution is solution/ copied to a private folder (and to
`/solution` in a container) and `bash <there>/solve.sh` run from the workspace root; its stdout
is the final answer. Grading copies tests/ into the workspace as `./tests` (and to `/tests` in a
container) only after the agent, points `VERIFIER_DIR` at a fresh empty folder outside the
workspace (`/logs/verifier` in a container), runs `bash tests/test.sh` from the workspace root
(as `[verifier] user` where the backend can switch users) and reads `reward.txt` (one number)
or else `reward.json` (`{"reward": 0.75, ...}`). Whatever the agent left at those paths is
removed before the tests go in; `VERIFIER_DIR` is under the verifier's fresh TMPDIR off
containers. Pass means reward >= the run's `reward_threshold` (default 1); the reward is always
kept as the sample's `reward` score, other numbers in reward.json as `reward.<key>`. No reward
file, or one that is not a number, is a `fail` with the reason - never a silent 0, and not an
`error`: the verifier ran in the agent's workspace, so the agent could have caused it (unless
test.sh hard-codes /logs/verifier where the sandbox has none: that is the harness's `error`).

A separate verifier (`separate_verifier`, see `evalrun.tasks.harbor.env`) is graded the same way,
in the fresh sandbox the trial opens for it with the agent's artifacts in place; when its image
bundles the tests (a `[verifier.environment] docker_image`, or tests/Dockerfile), nothing is
copied in and `bash /tests/test.sh` runs from the workspace root.
"""

from __future__ import annotations

import asyncio
import posixpath
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evalrun.config.schema import EvalConfig
from evalrun.errors import TaskFormatError
from evalrun.models.records import AgentResult, Outcome, ToolCall
from evalrun.models.writable import tail_text
from evalrun.sandbox.base import (
    IMAGE_USER,
    ExecResult,
    Sandbox,
    SandboxBackend,
    TaskImage,
)
from evalrun.tasks.base import (
    HARBOR_TASK_FILE,
    Difficulty,
    FormatDefaults,
    SetupFailed,
    TaskSpec,
    Verdict,
    failure_reason,
    inject,
    setup_log,
    solved,
    with_notes,
)
from evalrun.tasks.harbor.reward import VERIFIER_ENV, RewardError, RewardMissing, read_reward
from evalrun.tasks.harbor.toml import HarborToml, Healthcheck

TASK_FILE = HARBOR_TASK_FILE
INSTRUCTION_FILE = "instruction.md"
TEST_SCRIPT = "test.sh"
SOLVE_SCRIPT = "solve.sh"
SETUP_SCRIPT = "setup.sh"  # in environment/ (no Dockerfile) and steps/<name>/workdir/
BUILD_ONLY_FILES = (".dockerignore",)  # describes the image, not the workspace
CONTAINER_VERIFIER_DIR = "/logs/verifier"
CONTAINER_TESTS_DIR = "/tests"
CONTAINER_SOLUTION_DIR = "/solution"
DEFAULT_MAX_STEPS = 100  # Harbor has no step cap; agents that count model requests use this
OUTPUT_TAIL_CHARS = 4000
_CANARY = re.compile(r"^(<!--.*canary.*-->|#.*canary.*)$", re.IGNORECASE)


# task.toml keys evalrun acts on; every other field is kept and shown (`HarborFormat.kept_fields`)
@dataclass(frozen=True)
class HarborLayout:
    """Every path of a Harbor task folder (see the module docstring)."""

    root: Path

    @property
    def task_file(self) -> Path:
        return self.root / TASK_FILE

    @property
    def instruction_file(self) -> Path:
        return self.root / INSTRUCTION_FILE

    @property
    def environment_dir(self) -> Path:
        return self.root / "environment"

    @property
    def dockerfile(self) -> Path:
        return self.environment_dir / "Dockerfile"

    @property
    def tests_dir(self) -> Path:
        return self.root / "tests"

    @property
    def test_script(self) -> Path:
        return self.tests_dir / TEST_SCRIPT

    @property
    def solution_dir(self) -> Path:
        return self.root / "solution"

    def step_dir(self, name: str) -> Path:
        return self.root / "steps" / name


def strip_canary(text: str) -> str:
    """The instruction without its leading canary comment lines, as Harbor gives it to agents."""
    lines = text.split("\n")
    start = 0
    while start < len(lines) and _CANARY.match(lines[start].strip()):
        start += 1
    while start and start < len(lines) and not lines[start].strip():
        start += 1
    return "\n".join(lines[start:])


def task_spec(
    config: HarborToml, task_id: str, prompt: str, agent_timeout_s: float | None
) -> TaskSpec:
    """The `TaskSpec` of a Harbor task, or of one of its steps, from its task.toml."""
    return TaskSpec(
        id=task_id,
        prompt=prompt,
        max_steps=DEFAULT_MAX_STEPS,
        difficulty=config.metadata.difficulty or Difficulty.medium,
        tags=config.metadata.tags,
        agent_timeout_s=agent_timeout_s,
        mcp_servers=config.environment.servers(),
    )


def read_instruction(path: Path) -> str:
    """An instruction file's text, canary lines removed; `TaskFormatError` when missing/blank."""
    if not path.is_file():
        raise TaskFormatError(path, "missing: a Harbor task needs this instruction (the prompt)")
    try:
        text = strip_canary(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise TaskFormatError(path, f"not UTF-8 text: {exc}") from exc
    if not text.strip():
        raise TaskFormatError(path, "is empty: the prompt must not be blank")
    return text


@dataclass(frozen=True)
class Verifier:
    """How one grading runs: which tests/ folders (later ones over earlier), with what.
    `bundled`: the sandbox's image holds the tests at /tests already; none are copied in."""

    tests_dirs: tuple[Path, ...]
    timeout_s: float | None
    env: Mapping[str, str]
    user: str | None
    bundled: bool = False


@dataclass(frozen=True)
class HarborFormat(FormatDefaults):
    """The `TaskFormat` of a Harbor task folder (see the module docstring)."""

    layout: HarborLayout
    config: HarborToml
    reward_threshold: float = EvalConfig.reward_threshold
    verifier_env: Mapping[str, str] = field(default_factory=dict)
    solution_env: Mapping[str, str] = field(default_factory=dict)
    unsupported: tuple[str, ...] = ()
    name: str = "harbor"

    @property
    def image(self) -> TaskImage | None:
        """The task's own image (its prebuilt `docker_image`, else its Dockerfile), if any."""
        return self.sandbox_spec.image

    @property
    def verifier(self) -> Verifier:
        apart = self.separate_verifier
        return Verifier(
            (self.layout.tests_dir,),
            self.config.verifier.timeout_sec,
            self.verifier_env,
            self.config.verifier.user,
            bundled=apart is not None and apart.bundled_tests,
        )

    def cannot_run_on(self, backend: SandboxBackend) -> str | None:
        if self.unsupported:
            return f"uses what evalrun cannot provide: {'; '.join(self.unsupported)}"
        apart = self.separate_verifier
        if apart is not None and (problem := apart.cannot_run_on(backend)):
            return problem
        if self.sandbox_spec.is_default:
            return None
        return backend.cannot_host(self.sandbox_spec)

    def setup_dirs(self) -> list[Path]:
        dirs = [self.layout.environment_dir]
        if self.step_plan is not None:
            dirs += [d for step in self.step_plan.steps for d in step.format.setup_dirs()]
        return dirs

    def hidden_paths(self) -> list[str]:
        tests = self.layout.tests_dir
        files = [p.relative_to(tests).as_posix() for p in sorted(tests.rglob("*")) if p.is_file()]
        return [f"tests/{f}" for f in files] + [f"{CONTAINER_TESTS_DIR}/{f}" for f in files]

    async def prepare(self, sandbox: Sandbox, timeout_s: float) -> str:
        env_dir = self.layout.environment_dir
        log = ""
        if env_dir.is_dir() and not self.layout.dockerfile.is_file():
            # the task author's preparation, before the agent: as the image's user (root unless
            # it names one), as Harbor runs its environment's commands, where users switch
            user = IMAGE_USER if sandbox.switches_users else None
            log = await populate(sandbox, env_dir, timeout_s, BUILD_ONLY_FILES, user)
        if self.config.environment.healthcheck:
            log += await healthcheck(sandbox, self.config.environment.healthcheck)
        return log

    async def solve(self, sandbox: Sandbox) -> AgentResult:
        return await run_solution(sandbox, self.layout.solution_dir, self.solution_env)

    async def grade(self, sandbox: Sandbox, answer: str, timeout_s: float) -> Verdict:
        return await self.run_verifier(sandbox, self.verifier, timeout_s)

    async def run_verifier(self, sandbox: Sandbox, verifier: Verifier, timeout_s: float) -> Verdict:
        """Inject the tests folders (unless the image holds them), run test.sh, read its
        reward; `verdict_for` says what it means."""
        timeout_s = verifier.timeout_s or timeout_s
        notes = [] if verifier.bundled else await _inject_tests(sandbox, verifier.tests_dirs)
        verifier_dir = await _fresh_verifier_dir(sandbox)
        env = {**verifier.env, VERIFIER_ENV: verifier_dir}
        script = f"{CONTAINER_TESTS_DIR if verifier.bundled else 'tests'}/{TEST_SCRIPT}"
        user = verifier.user if sandbox.switches_users else None
        result = await sandbox.exec(["bash", script], env=env, timeout_s=timeout_s, user=user)
        verdict = await self._verdict(sandbox, result, verifier_dir, verifier, timeout_s)
        return with_notes(verdict, notes)

    async def _verdict(
        self,
        sandbox: Sandbox,
        result: ExecResult,
        verifier_dir: str,
        verifier: Verifier,
        timeout_s: float,
    ) -> Verdict:
        """Judge a test.sh run: its timeout, else the reward it left."""
        output = tail_text((result.stdout + result.stderr).strip(), OUTPUT_TAIL_CHARS)
        took, code = result.duration_s, result.exit_code
        if result.timed_out:
            reason = f"tests/test.sh timed out after {timeout_s:g}s"
            return Verdict(Outcome.failed, reason, None, output, took, timed_out=True)
        try:
            reward, scores = await self._read_reward(sandbox, verifier_dir, verifier)
        except RewardError as exc:
            reason = (
                f"{exc} (tests/test.sh exit {code}: {failure_reason(output, code, TEST_SCRIPT)})"
            )
            # The verifier ran in the agent's workspace, so the agent could have caused a missing
            # or garbled reward: a fail. A test.sh this sandbox cannot serve is not the agent's.
            outcome = Outcome.error if isinstance(exc, _Unreachable) else Outcome.failed
            return Verdict(outcome, reason, code, output, took)
        return self.verdict_for(reward, scores, output, code, took)

    def verdict_for(
        self, reward: float, scores: dict[str, float], output: str, code: int | None, took: float
    ) -> Verdict:
        if reward >= self.reward_threshold:
            return Verdict(Outcome.passed, None, code, output, took, scores=scores)
        reason = (
            f"reward {reward:g} < threshold {self.reward_threshold:g}: "
            f"{failure_reason(output, code, TEST_SCRIPT)}"
        )
        return Verdict(Outcome.failed, reason, code, output, took, scores=scores)

    async def _read_reward(
        self, sandbox: Sandbox, verifier_dir: str, verifier: Verifier
    ) -> tuple[float, dict[str, float]]:
        """`read_reward`, with a hint when test.sh hard-codes a path this sandbox lacks."""
        try:
            return await read_reward(sandbox, verifier_dir)
        except RewardMissing as exc:
            scripts = [d / TEST_SCRIPT for d in verifier.tests_dirs if (d / TEST_SCRIPT).is_file()]
            script = scripts[-1].read_text(errors="replace") if scripts else ""
            if verifier_dir == CONTAINER_VERIFIER_DIR or CONTAINER_VERIFIER_DIR not in script:
                raise
            where = (
                "the sandbox user could not create here (the backend must provide it)"
                if sandbox.is_container
                else "only container backends provide (use sandbox=docker)"
            )
            raise _Unreachable(
                f"{exc}; test.sh writes to {CONTAINER_VERIFIER_DIR}, which {where}; "
                f"${VERIFIER_ENV} works everywhere"
            ) from None


async def populate(
    sandbox: Sandbox,
    folder: Path,
    timeout_s: float,
    drop: Sequence[str] = (),
    user: str | None = None,
) -> str:
    """Copy `folder`'s files into the workspace, run its setup.sh there as `user` (None: the
    sandbox's) and remove it (and the `drop` names); return setup.sh's output. Raises
    `SetupFailed` when setup.sh fails."""
    await sandbox.put(folder, ".")
    names = [n for n in drop if (folder / n).exists()]
    if not (folder / SETUP_SCRIPT).is_file():
        if names:
            done = await sandbox.exec(["rm", "-f", "--", *names], timeout_s=timeout_s)
            if not done.ok:
                raise SetupFailed(f"could not remove {', '.join(names)}: {done.stderr}")
        return ""
    removed = " ".join(["setup.sh", *names])
    result = await sandbox.exec(
        f"bash {SETUP_SCRIPT}; status=$?; rm -f -- {removed}; exit $status",
        timeout_s=timeout_s,
        user=user,
    )
    return setup_log(result, f"{folder.name}/{SETUP_SCRIPT}", timeout_s)


async def healthcheck(sandbox: Sandbox, check: Healthcheck) -> str:
    """Run `check.command` until it passes, with Docker HEALTHCHECK's timing: failures in the
    start period do not count, `retries` failures after it do (`SetupFailed`)."""
    started = time.monotonic()
    failures = 0
    while True:
        result = await sandbox.exec(check.command, timeout_s=check.timeout_sec)
        if result.ok:
            return f"healthcheck passed: {check.command}\n"
        if time.monotonic() - started < check.start_period_sec:
            await asyncio.sleep(check.start_interval_sec)
            continue
        failures += 1
        if failures >= check.retries:
            detail = tail_text((result.stdout + result.stderr).strip(), 300) or "no output"
            why = "timed out" if result.timed_out else f"exit {result.exit_code}"
            raise SetupFailed(
                f"healthcheck failed {failures} times ({why}): {check.command}: {detail}"
            )
        await asyncio.sleep(check.interval_sec)


async def run_solution(sandbox: Sandbox, folder: Path, env: Mapping[str, str]) -> AgentResult:
    """Copy a solution folder outside the workspace and run its solve.sh from the workspace."""
    if not (folder / SOLVE_SCRIPT).is_file():
        return AgentResult(error=f"no gold solution: {folder / SOLVE_SCRIPT} is missing")
    started = time.monotonic()
    where = posixpath.join(sandbox.private_dir, "solution")
    if sandbox.is_container:
        where = CONTAINER_SOLUTION_DIR
    await sandbox.exec(["rm", "-rf", "--", where], timeout_s=60)  # an earlier step's solution
    await sandbox.put(folder, where)
    steps = [ToolCall(name="overlay", args={"to": where}, duration_s=time.monotonic() - started)]
    script = posixpath.join(where, SOLVE_SCRIPT)
    result = await sandbox.exec(["bash", script], env=dict(env))
    return solved(result, f"bash {script}", steps)


async def _inject_tests(sandbox: Sandbox, tests_dirs: Sequence[Path]) -> list[str]:
    """Copy the tests folders in as ./tests (and /tests in a container): the first replaces
    whatever was there, the next ones add to it. Returns `inject`'s notes."""
    # a container's /logs/verifier was made fresh by `end_agent` (its parent is root's)
    also = [CONTAINER_TESTS_DIR] if sandbox.is_container else []
    notes: list[str] = []
    for index, tests_dir in enumerate(tests_dirs):
        if index == 0:
            notes += await inject(sandbox, tests_dir, "tests", also=also)
        else:
            await sandbox.put(tests_dir, "tests")
        if sandbox.is_container:
            await sandbox.put(tests_dir, CONTAINER_TESTS_DIR)
    return notes


class _Unreachable(RewardMissing):
    """No reward because test.sh writes where this sandbox offers no folder (not the agent's)."""


async def _fresh_verifier_dir(sandbox: Sandbox) -> str:
    """An empty folder outside the workspace the verifier may write: /logs/verifier in a
    container when it can be made there (the sandbox user may lack the rights), else one in the
    verifier's own fresh TMPDIR."""
    candidates = [CONTAINER_VERIFIER_DIR] if sandbox.is_container else []
    candidates.append("")  # "": the script's default, under $TMPDIR
    errors = []
    for folder in candidates:
        made = await sandbox.exec(["bash", "-c", _FRESH_DIR, "fresh", folder], timeout_s=60)
        if made.ok and made.stdout.strip():
            return made.stdout.strip()
        errors.append(f"{folder or '$TMPDIR/verifier'}: {made.stderr.strip() or made.exit_code}")
    raise OSError(f"could not make a fresh verifier folder ({'; '.join(errors)})")


# An empty folder the verifier can write: made, or emptied (a container's /logs/verifier is made
# fresh by `Sandbox.end_agent` in a parent the verifier's user cannot write).
_FRESH_DIR = (
    'd=${1:-$TMPDIR/verifier}; mkdir -p -- "$d" && find "$d" -mindepth 1 -delete && [ -w "$d" ] '
    '&& printf %s "$d"'
)
