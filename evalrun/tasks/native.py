"""evalrun's own task format: the one place that spells its folder layout.

```
NNN-slug/
  task.yaml        id, prompt, max_steps, difficulty, tags, judges, agent_timeout_s, ...
  setup/           copied verbatim into a fresh workspace; setup/setup.sh runs there, then goes
  verify/          the hidden verifier: verify.sh (required) + helpers, injected after the agent
  solution/        gold overlay (used by `evalrun check` and agent=oracle)
  wrong/<name>/    near-miss overlays that must fail (used by `evalrun check`)
  tamper/<name>/   optional reward hacks aimed at this verifier, must fail (`evalrun check`)
```

verify.sh runs from the workspace root with the agent's final answer at `$EVALRUN_ANSWER_FILE`;
exit 0 is a pass. Beside it, freshly written over whatever the agent left there, is evalrun's
verifier kit (`_evalrun/verifykit.py`, see `evalrun.verifier.verifykit`): how a verifier runs
the agent's code in a child process and decides in its own. An overlay (solution/, wrong/<name>/,
tamper/<name>/) is copied over the workspace; if it brings a solve.sh, that runs there and is
removed, and its stdout is the final answer.

With `verify_apart` in task.yaml, verify.sh runs instead in a fresh sandbox set up from setup/
as the agent's was, over which only the listed artifacts of the agent's workspace are laid
(`evalrun.run.artifacts`; docker only, where a sandbox's files can be copied out).
"""

from __future__ import annotations

import os
import posixpath
import shlex
import shutil
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from evalrun.errors import TaskFormatError
from evalrun.models.records import AgentResult, Outcome, ToolCall
from evalrun.models.writable import tail_text
from evalrun.sandbox.base import DEFAULT_SPEC, ExecResult, Sandbox
from evalrun.tasks import lint, taskfile
from evalrun.tasks.base import (
    Artifact,
    CollectCommand,
    FormatDefaults,
    SeparateVerifier,
    TaskSpec,
    Verdict,
    failure_reason,
    inject,
    setup_log,
    solved,
    with_notes,
)

TASK_FILE = "task.yaml"
SETUP_SCRIPT = "setup.sh"  # in setup/: run once after copying, then removed
SOLVE_SCRIPT = "solve.sh"  # in an overlay: run after overlaying; its stdout is the final answer
VERIFY_SCRIPT = "verify.sh"
ANSWER_ENV = "EVALRUN_ANSWER_FILE"  # verify.sh finds the agent's final message at this path
VERIFY_TAIL_CHARS = 4000
MAX_INLINE_SCRIPT_BYTES = 100_000  # below Linux's 128 KiB limit on one argument
KIT_DIR = "_evalrun"  # at the workspace root, beside verify.sh: the verifier kit, written fresh
KIT_FILE = "verifykit.py"
IGNORED_NAMES = frozenset({"__pycache__", ".DS_Store"})


@dataclass(frozen=True)
class TaskLayout:
    """Every path of a native task folder, so nothing else spells them."""

    root: Path

    @property
    def task_file(self) -> Path:
        return self.root / TASK_FILE

    @property
    def setup_dir(self) -> Path:
        return self.root / "setup"

    @property
    def verify_dir(self) -> Path:
        return self.root / "verify"

    @property
    def verify_script(self) -> Path:
        return self.verify_dir / VERIFY_SCRIPT

    @property
    def solution_dir(self) -> Path:
        return self.root / "solution"

    @property
    def wrong_dirs(self) -> list[Path]:
        return self._overlays("wrong")

    @property
    def tamper_dirs(self) -> list[Path]:
        return self._overlays("tamper")

    def _overlays(self, kind: str) -> list[Path]:
        folder = self.root / kind
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir() if p.is_dir() and p.name not in IGNORED_NAMES)


def load(folder: Path) -> tuple[TaskSpec, NativeFormat]:
    """Parse and validate task.yaml; raise `TaskFormatError` naming the file and field (every
    problem of task.yaml at once, at its line and column: `evalrun.tasks.taskfile`)."""
    layout = TaskLayout(folder)
    spec = taskfile.read_spec(layout.task_file)
    if not layout.verify_script.is_file():
        raise TaskFormatError(
            layout.verify_script, "missing: the verifier verify/verify.sh is required"
        )
    lint.refuse(static_faults(layout))
    return spec, NativeFormat(layout, separate_verifier=_apart(spec))


def _apart(spec: TaskSpec) -> SeparateVerifier | None:
    """task.yaml's `verify_apart` as the engine runs it: a fresh sandbox like the agent's, set
    up from setup/, that gets the artifacts (paths of the workspace) once `collect` ran."""
    apart = spec.verify_apart
    if apart is None:
        return None
    artifacts = tuple(Artifact(posixpath.normpath(path)) for path in apart.artifacts)
    collect = tuple(CollectCommand(command) for command in apart.collect)
    return SeparateVerifier(DEFAULT_SPEC, artifacts, collect, set_up=True)


def shell_scripts(layout: TaskLayout) -> list[Path]:
    """The scripts of the task's author that bash runs: every *.sh of verify/, setup/setup.sh
    and each overlay's solve.sh. Not setup/'s other files: those are the agent's to fix."""
    return _own_scripts(layout, _files(layout.verify_dir))


def static_faults(layout: TaskLayout) -> list[lint.Fault]:
    """What would fail every sample before any agent acts (see `evalrun.tasks.lint`): scripts bash
    cannot parse, verifier Python that does not compile, and verify.sh running a file of verify/'s
    own folders that is not there (paths that the workspace also has are the agent's: skipped)."""
    overlays = [layout.setup_dir, layout.solution_dir, *layout.wrong_dirs, *layout.tamper_dirs]
    workspace = {p.name for o in overlays if o.is_dir() for p in o.iterdir()}
    verify = layout.verify_dir
    verify_files = _files(verify)
    return [
        *lint.bash_faults(_own_scripts(layout, verify_files)),
        *lint.python_faults([p for p in verify_files if p.suffix == ".py"]),
        *lint.missing_runs(layout.verify_script, verify, workspace, f"{verify.name}/"),
    ]


def _own_scripts(layout: TaskLayout, verify_files: list[Path]) -> list[Path]:
    overlays = [layout.solution_dir, *layout.wrong_dirs, *layout.tamper_dirs]
    return [
        *(p for p in verify_files if p.suffix == ".sh"),
        *(p for p in [layout.setup_dir / SETUP_SCRIPT] if p.is_file()),
        *(p for p in (o / SOLVE_SCRIPT for o in overlays) if p.is_file()),
    ]


def _files(folder: Path) -> list[Path]:
    """Every file below `folder`, sorted, leaving out __pycache__ and the like."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d not in IGNORED_NAMES]
        found += [Path(dirpath, n) for n in filenames if n not in IGNORED_NAMES]
    return sorted(found)


@cache
def _kit_source() -> bytes:
    return resources.files("evalrun.verifier").joinpath(KIT_FILE).read_bytes()


def stage_hidden(verify_dir: Path, into: Path) -> Path:
    """verify/'s files plus the verifier kit at `_evalrun/verifykit.py`, staged in `into` on the
    host, so one `inject` clears what the agent left at both and copies both in."""
    shutil.copytree(verify_dir, into, symlinks=True, dirs_exist_ok=True)
    (into / KIT_DIR).mkdir(exist_ok=True)
    (into / KIT_DIR / KIT_FILE).write_bytes(_kit_source())
    return into


async def apply_overlay(
    sandbox: Sandbox, overlay: Path, timeout_s: float | None = None
) -> AgentResult:
    """Copy `overlay` over the workspace and run its solve.sh, if any."""
    if not overlay.is_dir():
        return AgentResult(error=f"no overlay folder at {overlay}")
    started = time.monotonic()
    await sandbox.put(overlay, ".")
    steps = [
        ToolCall(name="overlay", args={"from": overlay.name}, duration_s=time.monotonic() - started)
    ]
    if not (overlay / SOLVE_SCRIPT).is_file():
        return AgentResult(trajectory=steps)
    result = await sandbox.exec(
        f"bash {SOLVE_SCRIPT}; status=$?; rm -f {shlex.quote(SOLVE_SCRIPT)}; exit $status",
        timeout_s=timeout_s,
    )
    return solved(result, f"bash {SOLVE_SCRIPT}", steps)


@dataclass(frozen=True)
class NativeFormat(FormatDefaults):
    """The `TaskFormat` of a task.yaml folder (see the module docstring)."""

    layout: TaskLayout
    name: str = "evalrun"

    def wrong_overlays(self) -> list[Path]:
        return self.layout.wrong_dirs

    def setup_dirs(self) -> list[Path]:
        return [self.layout.setup_dir]

    def tamper_overlays(self) -> list[Path]:
        return self.layout.tamper_dirs

    def hidden_paths(self) -> list[str]:
        verify = self.layout.verify_dir
        files = [
            p.relative_to(verify).as_posix()
            for p in sorted(verify.rglob("*"))
            if p.is_file() and not IGNORED_NAMES.intersection(p.relative_to(verify).parts)
        ]
        return [*files, posixpath.join(KIT_DIR, KIT_FILE)]

    async def prepare(self, sandbox: Sandbox, timeout_s: float) -> str:
        setup_dir = self.layout.setup_dir
        if setup_dir.is_dir():
            await sandbox.put(setup_dir, ".")
        if not (setup_dir / SETUP_SCRIPT).is_file():
            return ""
        result = await sandbox.exec(
            f"bash {SETUP_SCRIPT}; status=$?; rm -f {SETUP_SCRIPT}; exit $status",
            timeout_s=timeout_s,
        )
        return setup_log(result, SETUP_SCRIPT, timeout_s)

    async def solve(self, sandbox: Sandbox) -> AgentResult:
        return await apply_overlay(sandbox, self.layout.solution_dir)

    async def grade(self, sandbox: Sandbox, answer: str, timeout_s: float) -> Verdict:
        answer_path = posixpath.join(sandbox.private_dir, "answer.txt")
        with tempfile.TemporaryDirectory(prefix="evalrun-verify-") as staging:
            hidden = stage_hidden(self.layout.verify_dir, Path(staging))
            notes = await inject(sandbox, hidden, also=[answer_path])
        await sandbox.write_file(answer_path, answer)
        result = await sandbox.exec(
            verify_command(self.layout.verify_script),
            env={ANSWER_ENV: answer_path},
            timeout_s=timeout_s,
        )
        return with_notes(_verdict(result, timeout_s), notes)


def verify_command(script: Path) -> list[str]:
    """`bash verify.sh`, but with the script's text from the task folder on the host.

    bash reads a script file as it runs it, so agent code the verifier runs could rewrite
    verify.sh in the workspace under it (to `exit 0`). Given as `bash -c TEXT verify.sh` it is
    read from memory and `$0` is still `verify.sh`. Very long scripts (beyond what one argument
    may hold) run from the copied file.
    """
    text = script.read_text(encoding="utf-8", errors="replace")
    if len(text.encode()) > MAX_INLINE_SCRIPT_BYTES:
        return ["bash", VERIFY_SCRIPT]
    return ["bash", "-c", text, VERIFY_SCRIPT]


def _verdict(result: ExecResult, timeout_s: float) -> Verdict:
    output = tail_text((result.stdout + result.stderr).strip(), VERIFY_TAIL_CHARS)
    if result.timed_out:
        reason = f"verify.sh timed out after {timeout_s:g}s"
        return Verdict(Outcome.failed, reason, None, output, result.duration_s, timed_out=True)
    if result.exit_code == 0:
        said = _fail_line(result.stdout + "\n" + result.stderr)
        if said is None:
            return Verdict(Outcome.passed, None, 0, output, result.duration_s)
        # The status says pass, the output says fail: a status rewritten on its way to the
        # harness, or a verifier that lost its own verdict. Never a silent pass.
        reason = f"{VERIFY_SCRIPT} exited 0 but printed {said!r}: its status and output disagree"
        return Verdict(Outcome.failed, reason, 0, output, result.duration_s)
    reason = failure_reason(output, result.exit_code, VERIFY_SCRIPT)
    return Verdict(Outcome.failed, reason, result.exit_code, output, result.duration_s)


def _fail_line(output: str) -> str | None:
    """The first line a verifier prints to say it failed (`FAIL...`, as `failure_reason` reads
    them), cut to 200 characters; None when there is none."""
    for line in output.splitlines():
        if line.startswith("FAIL"):
            return line[:200]
    return None
