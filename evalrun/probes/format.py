"""`ProbeFormat`: a probe as a `TaskFormat`, so the engine runs it like any task.

```
prepare(sandbox)        the fixture workspace, exactly as a native task's setup/ (+ setup.sh)
solve(sandbox)          replays scripted/good.yaml through the coder loop (agent=oracle on probes)
grade(sandbox, answer)  every expectation on the evidence -> pass only when all hold
```

The verdict's `scores` carry one entry per expectation, `expect:<name>` = 1.0 or 0.0, so the
store keeps each expectation's result on every sample and reports can give its pass rate per
probe; the verdict output lists each expectation with what was seen. Grading needs the evidence
`RecordingAgent` leaves (`evalrun.probes.evidence`); the plan wraps the agent for probe suites.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from evalrun.errors import TaskFormatError
from evalrun.models.records import AgentResult, Outcome
from evalrun.probes.evidence import read_evidence
from evalrun.probes.expect import Check
from evalrun.probes.spec import RUNS, ProbeLayout, ProbeSpec, load_script, load_spec
from evalrun.sandbox.base import Sandbox
from evalrun.tasks.base import FormatDefaults, Verdict
from evalrun.tasks.loader import Task, fingerprint, is_task_folder
from evalrun.tasks.native import NativeFormat, TaskLayout

SCORE_PREFIX = "expect:"


@dataclass(frozen=True)
class ProbeFormat(FormatDefaults):
    """The `TaskFormat` of a probe.yaml folder (see the module docstring). It has no near-miss
    overlays: a probe's near misses are scripted runs (scripted/bad.yaml)."""

    layout: ProbeLayout
    spec: ProbeSpec
    name: str = "probe"

    def setup_dirs(self) -> list[Path]:
        return [TaskLayout(self.layout.root).setup_dir]

    def hidden_paths(self) -> list[str]:
        return []  # graded on the host from the evidence; nothing hidden lands in the sandbox

    async def prepare(self, sandbox: Sandbox, timeout_s: float) -> str:
        return await NativeFormat(TaskLayout(self.layout.root)).prepare(sandbox, timeout_s)

    async def solve(self, sandbox: Sandbox) -> AgentResult:
        from evalrun.probes.replay import replay

        script = self.layout.run_file("good")
        return await replay(script, self.spec.prompt, self.spec.max_steps, sandbox)

    def verdict(self, evidence_checks: list[Check]) -> tuple[Outcome, str | None, str]:
        """Outcome, reason and the per-expectation report for a list of checks."""
        names = self.spec.names
        named = list(zip(names, evidence_checks, strict=True))
        broken = [n for n, c in named if not c.ok]
        lines = [f"{'ok  ' if c.ok else 'FAIL'} {n}: {c.detail}" for n, c in named]
        if broken:
            head = f"FAIL: {len(broken)} of {len(names)} expectations broken: {', '.join(broken)}"
            return Outcome.failed, head, "\n".join([head, *lines])
        return Outcome.passed, None, "\n".join([f"PASS: all {len(names)} expectations met", *lines])

    async def grade(self, sandbox: Sandbox, answer: str, timeout_s: float) -> Verdict:
        started = time.monotonic()
        evidence = await read_evidence(sandbox)
        unfinished = Check(False, "no evidence: the agent did not finish (timed out or cancelled)")
        checks = [
            exp.check(evidence) if evidence.finished else unfinished
            for exp in self.spec.expectations
        ]
        outcome, reason, report = self.verdict(checks)
        scores = {
            f"{SCORE_PREFIX}{n}": 1.0 if c.ok else 0.0
            for n, c in zip(self.spec.names, checks, strict=True)
        }
        exit_code = 0 if outcome is Outcome.passed else 1
        duration = time.monotonic() - started
        return Verdict(outcome, reason, exit_code, report, duration, scores=scores)


def load_probe(folder: Path) -> Task:
    """Load one probe folder as a Task; `TaskFormatError` naming the file and field."""
    folder = Path(folder)
    spec = load_spec(folder)
    layout = ProbeLayout(folder)
    for run in RUNS:
        load_script(layout.run_file(run))
    return Task(
        spec=spec.task_spec(), format=ProbeFormat(layout, spec), fingerprint=fingerprint(folder)
    )


def load_probes(probes_dir: Path) -> list[Task]:
    """Every probe folder directly below `probes_dir`, sorted by id."""
    probes_dir = Path(probes_dir)
    if not probes_dir.is_dir():
        raise TaskFormatError(probes_dir, "probes directory not found")
    probes = [load_probe(p) for p in sorted(probes_dir.iterdir()) if is_task_folder(p)]
    if not probes:
        raise TaskFormatError(probes_dir, "no probe folders found (expected <id>/probe.yaml)")
    return probes
