"""The Harbor / Terminal-Bench 2.0 task format, mapped onto evalrun's `Task`.

```
task-name/
  task.toml          metadata, timeouts, environment (see `harbor_toml`)
  instruction.md     the prompt
  environment/       the workspace's files; a Dockerfile here means the task needs its own image
  tests/test.sh      the hidden verifier (+ helpers); writes a reward into $VERIFIER_DIR
  solution/solve.sh  the gold solution, run from the workspace root
```

A sample's life: the workspace starts as environment/'s files (minus Dockerfile and
.dockerignore, which only describe the image). The gold solution is solution/ copied to a
private folder (and to `/solution` in a container) and `bash <there>/solve.sh` run from the
workspace root; its stdout is the final answer. Grading copies tests/ into the workspace as
`./tests` (and to `/tests` in a container) only after the agent, points `VERIFIER_DIR` at a fresh
empty folder outside the workspace (`/logs/verifier` in a container), runs `bash tests/test.sh`
from the workspace root and reads `reward.txt` (one number) or else `reward.json` (`{"reward":
0.75, ...}`). Pass means reward >= the run's `reward_threshold` (default 1); the reward is always
kept as the sample's `reward` score, other numbers in reward.json as `reward.<key>`. No reward
file, or one that is not a number, is an `error` outcome with the reason - never a silent 0.
"""

from __future__ import annotations

import posixpath
import time
from dataclasses import dataclass
from pathlib import Path

from evalrun.errors import SandboxError, TaskFormatError
from evalrun.formats.base import (
    Difficulty,
    SetupFailed,
    TaskImage,
    TaskSpec,
    Verdict,
    can_open_images,
    failure_reason,
    in_container,
    inject,
)
from evalrun.formats.harbor_reward import (
    VERIFIER_ENV,
    RewardError,
    RewardMissing,
    read_reward,
)
from evalrun.formats.harbor_toml import HarborToml, parse
from evalrun.records import AgentResult, Outcome, ToolCall
from evalrun.sandbox.base import Sandbox, SandboxBackend
from evalrun.sandbox.output import tail_text

TASK_FILE = "task.toml"
INSTRUCTION_FILE = "instruction.md"
TEST_SCRIPT = "test.sh"
SOLVE_SCRIPT = "solve.sh"
BUILD_ONLY_FILES = ("Dockerfile", ".dockerignore")  # describe the image, not the workspace
COMPOSE_FILES = ("docker-compose.yaml", "docker-compose.yml")
CONTAINER_VERIFIER_DIR = "/logs/verifier"
CONTAINER_TESTS_DIR = "/tests"
CONTAINER_SOLUTION_DIR = "/solution"
DEFAULT_MAX_STEPS = 100  # Harbor has no step cap; agents that count model requests use this
OUTPUT_TAIL_CHARS = 4000


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

    @property
    def solve_script(self) -> Path:
        return self.solution_dir / SOLVE_SCRIPT


def is_harbor_folder(folder: Path) -> bool:
    return (folder / TASK_FILE).is_file()


def load(folder: Path, *, reward_threshold: float = 1.0) -> tuple[TaskSpec, HarborFormat]:
    """Load a Harbor task folder; raise `TaskFormatError` naming the file and key."""
    layout = HarborLayout(folder)
    config = parse(layout.task_file)
    if not layout.instruction_file.is_file():
        raise TaskFormatError(
            layout.instruction_file, "missing: a Harbor task needs instruction.md (the prompt)"
        )
    if not layout.test_script.is_file():
        raise TaskFormatError(
            layout.test_script, "missing: a Harbor task needs tests/test.sh (the verifier)"
        )
    try:
        prompt = layout.instruction_file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TaskFormatError(layout.instruction_file, f"not UTF-8 text: {exc}") from exc
    if not prompt.strip():
        raise TaskFormatError(layout.instruction_file, "is empty: the prompt must not be blank")
    spec = TaskSpec(
        id=folder.name,
        prompt=prompt,
        max_steps=DEFAULT_MAX_STEPS,
        difficulty=config.metadata.difficulty or Difficulty.medium,
        tags=config.metadata.tags,
        agent_timeout_s=config.agent.timeout_sec,
    )
    image = None
    if layout.dockerfile.is_file():
        image = TaskImage(folder.name, layout.environment_dir)
    elif config.environment.docker_image:
        image = TaskImage(folder.name, None, prebuilt=config.environment.docker_image)
    if image and config.environment.build_timeout_sec:
        image = TaskImage(
            image.task_id, image.context_dir, image.prebuilt, config.environment.build_timeout_sec
        )
    return spec, HarborFormat(layout, config, reward_threshold, image)


@dataclass(frozen=True)
class HarborFormat:
    """The `TaskFormat` of a Harbor task folder (see the module docstring)."""

    layout: HarborLayout
    config: HarborToml
    reward_threshold: float = 1.0
    image: TaskImage | None = None
    name: str = "harbor"

    def cannot_run_on(self, backend: SandboxBackend) -> str | None:
        unsupported = self.config.unsupported()
        compose = [n for n in COMPOSE_FILES if (self.layout.environment_dir / n).is_file()]
        if compose:
            unsupported = "; ".join(filter(None, [unsupported, f"multi-container ({compose[0]})"]))
        if unsupported:
            return f"uses what evalrun cannot provide: {unsupported}"
        if self.image and not can_open_images(backend):
            return (
                f"needs {self.image.describe()}; sandbox={backend.name} cannot run task images "
                "(use sandbox=docker)"
            )
        return None

    def wrong_overlays(self) -> list[Path]:
        return []

    async def prepare(self, sandbox: Sandbox, timeout_s: float) -> str:
        env_dir = self.layout.environment_dir
        if not env_dir.is_dir():
            return ""
        await sandbox.put(env_dir, ".")
        present = [n for n in BUILD_ONLY_FILES if (env_dir / n).is_file()]
        if present:
            result = await sandbox.exec(["rm", "-f", "--", *present], timeout_s=timeout_s)
            if not result.ok:
                raise SetupFailed(f"could not remove {', '.join(present)}: {result.stderr}")
        return ""

    async def solve(self, sandbox: Sandbox) -> AgentResult:
        if not self.layout.solve_script.is_file():
            return AgentResult(error=f"no gold solution: {self.layout.solve_script} is missing")
        started = time.monotonic()
        where = posixpath.join(sandbox.private_dir, "solution")
        if in_container(sandbox):
            where = CONTAINER_SOLUTION_DIR
        await sandbox.put(self.layout.solution_dir, where)
        steps = [
            ToolCall(name="overlay", args={"to": where}, duration_s=time.monotonic() - started)
        ]
        script = posixpath.join(where, SOLVE_SCRIPT)
        result = await sandbox.exec(["bash", script], env=self.config.solution.env)
        steps.append(
            ToolCall(
                name="bash",
                args={"command": f"bash {script}"},
                result=tail_text(result.stdout + result.stderr, 2000),
                duration_s=result.duration_s,
                error=None if result.ok else f"exit {result.exit_code}",
            )
        )
        error = None
        if not result.ok:
            error = f"solve.sh failed (exit {result.exit_code}): {tail_text(result.stderr, 500)}"
        return AgentResult(output=result.stdout, trajectory=steps, error=error)

    async def grade(self, sandbox: Sandbox, answer: str, timeout_s: float) -> Verdict:
        timeout_s = self.config.verifier.timeout_sec or timeout_s
        container = in_container(sandbox)
        verifier_dir = await _fresh_verifier_dir(sandbox, container)
        await inject(sandbox, self.layout.tests_dir, "tests")
        if container:
            await sandbox.put(self.layout.tests_dir, CONTAINER_TESTS_DIR)
        env = {**self.config.verifier.env, VERIFIER_ENV: verifier_dir}
        result = await sandbox.exec(["bash", f"tests/{TEST_SCRIPT}"], env=env, timeout_s=timeout_s)
        output = tail_text((result.stdout + result.stderr).strip(), OUTPUT_TAIL_CHARS)
        took, code = result.duration_s, result.exit_code
        if result.timed_out:
            reason = f"tests/test.sh timed out after {timeout_s:g}s"
            return Verdict(Outcome.failed, reason, None, output, took, timed_out=True)
        try:
            reward, scores = await self._read_reward(sandbox, verifier_dir)
        except RewardError as exc:
            reason = (
                f"{exc} (tests/test.sh exit {code}: {failure_reason(output, code, TEST_SCRIPT)})"
            )
            return Verdict(Outcome.error, reason, code, output, took)
        if reward >= self.reward_threshold:
            return Verdict(Outcome.passed, None, code, output, took, scores=scores)
        reason = (
            f"reward {reward:g} < threshold {self.reward_threshold:g}: "
            f"{failure_reason(output, code, TEST_SCRIPT)}"
        )
        return Verdict(Outcome.failed, reason, code, output, took, scores=scores)

    async def _read_reward(
        self, sandbox: Sandbox, verifier_dir: str
    ) -> tuple[float, dict[str, float]]:
        """`read_reward`, with a hint when test.sh hard-codes a path this sandbox lacks."""
        try:
            return await read_reward(sandbox, verifier_dir)
        except RewardMissing as exc:
            script = self.layout.test_script.read_text(errors="replace")
            if verifier_dir == CONTAINER_VERIFIER_DIR or CONTAINER_VERIFIER_DIR not in script:
                raise
            where = (
                "the sandbox user could not create here (the backend must provide it)"
                if in_container(sandbox)
                else "only container backends provide (use sandbox=docker)"
            )
            raise RewardMissing(
                f"{exc}; test.sh writes to {CONTAINER_VERIFIER_DIR}, which {where}; "
                f"${VERIFIER_ENV} works everywhere"
            ) from None


async def _fresh_verifier_dir(sandbox: Sandbox, container: bool) -> str:
    """An empty folder outside the workspace: /logs/verifier in a container when it can be made
    there (the sandbox user may lack the rights), else one in the sandbox's private folder."""
    candidates = [posixpath.join(sandbox.private_dir, "verifier")]
    if container:
        candidates.insert(0, CONTAINER_VERIFIER_DIR)
    errors = []
    for folder in candidates:
        made = await sandbox.exec(
            ["bash", "-c", 'rm -rf -- "$1" && mkdir -p -- "$1"', "fresh", folder], timeout_s=60
        )
        if made.ok:
            return folder
        errors.append(f"{folder}: {made.stderr.strip() or made.exit_code}")
    raise SandboxError(f"could not make a fresh verifier folder ({'; '.join(errors)})")
