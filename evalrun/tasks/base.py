"""What every task format maps onto: the spec, the verdict, and the `TaskFormat` seam.

A format owns three moments of a sample's life, because only it knows where its files are and
what its scripts expect:

```
prepare(sandbox)          fresh workspace -> the state the agent starts from   (engine)
solve(sandbox)            the gold solution, applied as an agent would         (agent=oracle, check)
grade(sandbox, answer)    hidden verifier injected after the agent -> Verdict  (grading)
```

The engine, the oracle agent, grading and `evalrun check` call these methods and never ask which
format a task is in. A format says what its samples' sandboxes must give (`sandbox_spec`: its own
image, a workspace path, a network policy, limits); `cannot_run_on(backend)` lets planning skip
(or refuse) a task a backend cannot host, with the reason. A format whose verifier runs in a
sandbox of its own says so too (`separate_verifier`): the trial then opens that second sandbox,
carries the agent's artifacts over and calls `grade` there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalrun.models.records import AgentResult, Outcome, ToolCall
from evalrun.models.writable import tail_text
from evalrun.sandbox.base import DEFAULT_SPEC, ExecResult, Sandbox, SandboxBackend, SandboxSpec
from evalrun.sandbox.base import TaskImage as TaskImage  # re-exported: formats describe images

HARBOR_TASK_FILE = "task.toml"  # what makes a folder a Harbor task (formats.harbor loads it)


class Difficulty(StrEnum):
    easy = "easy"
    medium = "medium"
    hard = "hard"


class JudgeSpec(BaseModel):
    """A G-Eval judge for one task: scores samples 0-1, never overrides the verifier."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="the judge's name, a non-empty string")
    task_introduction: str = Field(min_length=1, description="what the task is, a non-empty text")
    evaluation_criteria: str = Field(min_length=1, description="how to score, a non-empty text")


class McpTransport(StrEnum):
    """How an agent reaches an MCP server (Harbor's names; its `http` is `streamable-http`)."""

    stdio = "stdio"  # the agent starts `command` in its own sandbox and talks over its stdin/stdout
    sse = "sse"
    streamable_http = "streamable-http"


class McpServer(BaseModel):
    """An MCP server a task offers its agent (Harbor's `[[environment.mcp_servers]]`).

    A `stdio` server is a command the agent's MCP client starts inside the sandbox (so `command`
    and `args` are paths and words of the sandbox, not the host); an `sse` / `streamable-http`
    server is a `url` the agent connects to (usually a sidecar container the task starts).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    transport: McpTransport
    command: str | None = Field(default=None, min_length=1)
    args: tuple[str, ...] = ()
    url: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _reachable(self) -> McpServer:
        if self.transport is McpTransport.stdio and not self.command:
            raise ValueError(f"MCP server {self.name!r}: transport 'stdio' needs a command")
        if self.transport is not McpTransport.stdio and not self.url:
            raise ValueError(
                f"MCP server {self.name!r}: transport {self.transport.value!r} needs a url"
            )
        return self


class VerifyApart(BaseModel):
    """task.yaml's `verify_apart`: the verifier runs in a fresh sandbox, set up as the agent's was,
    into which only the listed `artifacts` of the agent's workspace are carried (after the
    `collect` commands ran in the agent's sandbox). Nothing else the agent left - processes,
    files outside the artifacts, changes outside the workspace - reaches the grading."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    artifacts: tuple[str, ...] = Field(
        default=(".",),
        min_length=1,
        description="a list of paths inside the workspace, e.g. [src, notes.txt]",
    )
    collect: tuple[str, ...] = Field(
        default=(), description="a list of shell commands, e.g. ['make dist']"
    )

    @field_validator("artifacts")
    @classmethod
    def _inside_workspace(cls, paths: tuple[str, ...]) -> tuple[str, ...]:
        for path in paths:
            normal = os.path.normpath(path)
            if os.path.isabs(path) or normal == ".." or normal.startswith("../"):
                raise ValueError(f"{path!r} is not a path inside the workspace")
        return paths


class TaskSpec(BaseModel):
    """What an agent and a report need to know about a task, whatever its format.

    For the native format this is exactly task.yaml (unknown keys rejected); other formats fill it
    from their own metadata. Each field's description says, in a user's words, what a value must
    be (a bad task.yaml is told `tags: expected a list of tags, e.g. [python], got 'python'`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="the task folder's name, e.g. 001-fix-the-parser")
    prompt: str = Field(description="the instructions for the agent, a non-blank text")
    max_steps: int = Field(gt=0, description="a whole number above 0")
    difficulty: Difficulty = Field(description="one of easy, medium, hard")
    tags: tuple[str, ...] = Field(default=(), description="a list of tags, e.g. [python]")
    judges: tuple[JudgeSpec, ...] = Field(
        default=(),
        description="a list of judges, each with name, task_introduction, evaluation_criteria",
    )
    agent_timeout_s: float | None = Field(
        default=None, gt=0, description="a number of seconds above 0"
    )
    # false: the verifier runs as it did before `evalrun.verifier.hardening` (no start-up hook),
    # for one that truly needs the workspace to provide a standard-library module
    verifier_hardening: bool = Field(default=True, description="true or false")
    # the MCP servers the agent may use (agents that cannot use them skip the task)
    mcp_servers: tuple[McpServer, ...] = ()
    # the verifier sees only these artifacts, in a fresh sandbox (native tasks; docker)
    verify_apart: VerifyApart | None = None

    @field_validator("prompt")
    @classmethod
    def _prompt_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("mcp_servers")
    @classmethod
    def _unique_names(cls, servers: tuple[McpServer, ...]) -> tuple[McpServer, ...]:
        names = [s.name for s in servers]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            repeated = ", ".join(map(repr, twice))
            raise ValueError(f"MCP server names must be unique, {repeated} repeats")
        return servers


@dataclass(frozen=True)
class Verdict:
    """The verifier's answer for one sample.

    `scores` carries numbers the verifier reported beside the verdict (a Harbor reward, kept as
    `reward` even when it is 1 or 0); the engine copies them onto `SampleRecord.scores`.
    """

    outcome: Outcome
    reason: str | None
    exit_code: int | None
    output: str
    duration_s: float
    timed_out: bool = False
    scores: Mapping[str, float] = field(default_factory=dict)


class SetupFailed(Exception):
    """Preparing the workspace failed: the sample is an `error`, never scored against the agent."""

    def __init__(self, reason: str, timed_out: bool = False):
        super().__init__(reason)
        self.timed_out = timed_out


class FolderLayout(Protocol):
    """The two paths every format's layout has (used in error messages)."""

    @property
    def root(self) -> Path: ...

    @property
    def task_file(self) -> Path: ...


@dataclass(frozen=True)
class Step:
    """One turn of a multi-step task: the agent works on `spec.prompt` in the workspace the
    earlier turns left; `format` prepares the turn (its own files), solves it (agent=oracle) and
    grades it, like a task of its own."""

    name: str
    spec: TaskSpec
    format: TaskFormat


@dataclass(frozen=True)
class Artifact:
    """A file or folder of the agent's sandbox that a separate verifier gets, at the same path.

    `path` is absolute, or relative to the workspace; what matches an `exclude` pattern (as
    `tar --exclude`) stays behind."""

    path: str
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class CollectCommand:
    """A command run in the agent's sandbox once the agent is done, before the artifacts are
    copied out (e.g. to write what the agent changed into an artifact folder)."""

    command: str
    timeout_s: float = 60.0
    user: str | None = None  # None: the sandbox's user


@dataclass(frozen=True)
class SeparateVerifier:
    """A verifier that runs in a fresh sandbox of its own (`spec`), where nothing the agent left
    exists but the `artifacts` (collected after the `collect` commands ran, best effort).
    `bundled_tests`: the verifier's image already holds its tests; none are copied in.
    `set_up`: the fresh sandbox is first prepared as the agent's was (the format's `prepare`:
    a native task's setup/), for a task whose environment is files rather than an image."""

    spec: SandboxSpec
    artifacts: tuple[Artifact, ...]
    collect: tuple[CollectCommand, ...] = ()
    bundled_tests: bool = False
    set_up: bool = False

    def cannot_run_on(self, backend: SandboxBackend) -> str | None:
        """Why `backend` cannot grade this way (None: it can)."""
        if not backend.copies_out:
            return "a separate verifier needs sandbox=docker (its artifacts are copied out)"
        problem = backend.cannot_host(self.spec)
        return f"its separate verifier: {problem}" if problem else None


class StepPlan(Protocol):
    """How a multi-step task's turns run one after another in one sandbox, and add up."""

    @property
    def steps(self) -> tuple[Step, ...]: ...

    def stop_reason(self, step: Step, verdict: Verdict) -> str | None:
        """Why no later step runs after `step` ended with `verdict` (None: go on)."""
        ...

    def combine(self, graded: Sequence[tuple[Step, Verdict]]) -> Verdict:
        """The task's verdict from the verdicts of the steps that ran, in order."""
        ...


class TaskFormat(Protocol):
    """How one loaded task prepares, solves and grades a sample. See the module docstring.

    `prepare` raises `SetupFailed`; all methods may raise `SandboxError`/`OSError` when the
    sandbox itself fails (the engine records those as `error`).
    """

    # read-only members (formats are frozen dataclasses):
    @property
    def name(self) -> str:
        """The format's name, shown in plans: "evalrun", "harbor" or "probe"."""
        ...

    @property
    def layout(self) -> FolderLayout: ...

    @property
    def sandbox_spec(self) -> SandboxSpec:
        """What the samples' sandboxes must give; SandboxSpec(): the backend as configured."""
        ...

    @property
    def step_plan(self) -> StepPlan | None:
        """None: one turn - prepare, the agent, grade."""
        ...

    @property
    def separate_verifier(self) -> SeparateVerifier | None:
        """None: `grade` runs in the agent's sandbox; else in a sandbox of its own (see
        `SeparateVerifier`), which the backend must be able to fill (`copies_out`)."""
        ...

    @property
    def warnings(self) -> tuple[str, ...]:
        """Said once per run (e.g. keys the format's runner ignores)."""
        ...

    @property
    def kept_fields(self) -> Mapping[str, Any]:
        """What the task file says that evalrun does not use."""
        ...

    def cannot_run_on(self, backend: SandboxBackend) -> str | None:
        """Why this task cannot run on `backend` (None: it can)."""
        ...

    def wrong_overlays(self) -> list[Path]:
        """Near-miss overlays `evalrun check` must see fail (may be empty)."""
        ...

    def setup_dirs(self) -> list[Path]:
        """The host folders `prepare` copies into the workspace over a sample's life (missing
        ones are skipped). Planning refuses a task whose setup is larger than `setup_max_mb`."""
        ...

    def tamper_overlays(self) -> list[Path]:
        """The task's own reward hacks `evalrun check` must see fail (may be empty)."""
        ...

    def hidden_paths(self) -> list[str]:
        """Every path (relative to the workspace, or absolute) the hidden verifier will bring:
        where `evalrun.honesty.tamper`'s attacks plant their traps."""
        ...

    async def prepare(self, sandbox: Sandbox, timeout_s: float) -> str:
        """Build the starting workspace; return its log."""
        ...

    async def solve(self, sandbox: Sandbox) -> AgentResult:
        """Apply the gold solution; its final answer is the result's output."""
        ...

    async def grade(self, sandbox: Sandbox, answer: str, timeout_s: float) -> Verdict:
        """Inject the hidden verifier, run it, and judge."""
        ...


@dataclass(frozen=True, kw_only=True)
class FormatDefaults:
    """The `TaskFormat` members of a format that asks for nothing more: the backend's sandbox as
    configured, one turn graded in the agent's sandbox (unless given a `separate_verifier`),
    nothing to warn or keep, runs anywhere its verifier can, no near-miss or tamper overlays. A
    format overrides what it has."""

    sandbox_spec: SandboxSpec = DEFAULT_SPEC
    step_plan: StepPlan | None = None
    separate_verifier: SeparateVerifier | None = None
    warnings: tuple[str, ...] = ()
    kept_fields: Mapping[str, Any] = field(default_factory=dict)

    def cannot_run_on(self, backend: SandboxBackend) -> str | None:
        apart = self.separate_verifier
        return None if apart is None else apart.cannot_run_on(backend)

    def wrong_overlays(self) -> list[Path]:
        return []

    def tamper_overlays(self) -> list[Path]:
        return []


def setup_bytes(folders: Sequence[Path]) -> int:
    """The apparent size of every file under `folders` (what copying them moves; a sparse file
    counts in full), symlinks not followed."""
    total = 0
    for folder in folders:
        for dirpath, _, filenames in os.walk(folder):
            for name in filenames:
                with suppress(OSError):
                    total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def setup_log(result: ExecResult, where: str, timeout_s: float) -> str:
    """The output of the setup script `where` names; `SetupFailed` when it timed out or failed."""
    log = result.stdout + result.stderr
    if result.timed_out:
        raise SetupFailed(f"{where} timed out after {timeout_s:g}s", timed_out=True)
    if not result.ok:
        detail = tail_text(log.strip(), 500)
        raise SetupFailed(f"{where} failed (exit {result.exit_code}): {detail}")
    return log


def solved(result: ExecResult, command: str, steps: list[ToolCall]) -> AgentResult:
    """The gold solution's run of solve.sh (`command`) as an agent's result: its bash step after
    `steps`, its stdout the final answer, and an error when it failed."""
    steps.append(
        ToolCall(
            name="bash",
            args={"command": command},
            result=tail_text(result.stdout + result.stderr, 2000),
            duration_s=result.duration_s,
            error=None if result.ok else f"exit {result.exit_code}",
        )
    )
    error = None
    if not result.ok:
        error = f"solve.sh failed (exit {result.exit_code}): {tail_text(result.stderr, 500)}"
    return AgentResult(output=result.stdout, trajectory=steps, error=error)


def failure_reason(output: str, exit_code: int | None, script: str) -> str:
    """The verifier's own `FAIL: ...` line, else its last line, else the exit code."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("FAIL"):
            return line[:500]
    if lines:
        return lines[-1][:500]
    return f"{script} exited {exit_code} without output"


async def inject(
    sandbox: Sandbox, host_dir: Path, dest: str = ".", also: Sequence[str] = ()
) -> list[str]:
    """Copy a hidden folder (verify/, tests/) in after the agent, into paths that did not exist.

    Whatever the agent left where the folder's entries go - a stale `_verifier/unittest.py` that
    would shadow the stdlib, a folder where verify.sh goes, a read-only tree, a symlink - is
    removed first (`Sandbox.clear`, with the harness's rights; so are the paths in `also`), so
    only the task's own files are there and a planted path can neither fool the verifier nor
    turn the agent's `fail` into a harness `error`. So is what would be imported instead of a
    hidden module that lands beside the agent's files (`shadowing`). Returns the notes of
    permissions the harness had to restore, for the sample's reason. Only after
    `Sandbox.end_agent`.
    """
    whole = dest in (".", "")
    targets = [entry.name for entry in sorted(host_dir.iterdir())] if whole else [dest]
    beside = shadowing(host_dir) if whole else []
    notes = await sandbox.clear([*targets, *beside, *also])
    await sandbox.put(host_dir, dest)
    return notes


_ARCHES = ("x86_64", "aarch64")
# Where python finds an extension module `x` before `x.py`: any CPython 3 on Linux takes `x.so`
# and `x.abi3.so`, and its own version's `x.cpython-3NN-<arch>.so`.
_EXTENSION_SUFFIXES = (
    ".so",
    ".abi3.so",
    *(f".cpython-3{minor}-{arch}-linux-gnu.so" for minor in range(6, 16) for arch in _ARCHES),
)


def shadowing(host_dir: Path) -> list[str]:
    """What the agent could leave at the workspace root that python would import instead of a
    hidden module or package landing there: for `x.py`, a package folder `x/` (a package beats
    a module in the same folder) and extension modules `x*.so`; for a folder `x/` (a namespace
    package when it has no `__init__.py`), a module `x.py` or `x*.so` beside it; and the root's
    `__pycache__`. Only the root: every other hidden folder is cleared whole."""
    paths: list[str] = []
    for entry in sorted(host_dir.iterdir()):
        stem, suffix = os.path.splitext(entry.name)
        if entry.is_file() and suffix == ".py" and stem.isidentifier():
            paths += [stem, *(stem + s for s in _EXTENSION_SUFFIXES)]
        elif entry.is_dir() and entry.name.isidentifier():
            paths += [entry.name + ".py", *(entry.name + s for s in _EXTENSION_SUFFIXES)]
    return [*paths, "__pycache__"] if paths else []


def with_notes(verdict: Verdict, notes: Sequence[str]) -> Verdict:
    """`verdict` with the harness's repair notes appended to its reason (kept on a pass too)."""
    if not notes:
        return verdict
    said = "; ".join(notes)
    return replace(verdict, reason=f"{verdict.reason} ({said})" if verdict.reason else said)
