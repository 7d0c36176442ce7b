"""`agent=oracle`: applies a task's gold solution, so an honest oracle must pass it.

An overlay is a folder copied over the workspace; if it brings a `solve.sh`, that script runs in
the workspace (for changes only commands can make: git history, database rows) and is removed,
and its stdout becomes the agent's final answer. `evalrun check` applies the `wrong/` overlays the
same way.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path

from evalrun.records import AgentResult, ToolCall
from evalrun.sandbox.base import Sandbox
from evalrun.sandbox.output import tail_text
from evalrun.tasks import SOLVE_SCRIPT, Task


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
    steps.append(
        ToolCall(
            name="bash",
            args={"command": f"bash {SOLVE_SCRIPT}"},
            result=tail_text(result.stdout + result.stderr, 2000),
            duration_s=result.duration_s,
            error=None if result.ok else f"exit {result.exit_code}",
        )
    )
    error = None
    if not result.ok:
        error = f"{SOLVE_SCRIPT} failed (exit {result.exit_code}): {tail_text(result.stderr, 500)}"
    return AgentResult(output=result.stdout, trajectory=steps, error=error)


class OracleAgent:
    name = "oracle"

    def preflight(self) -> None:
        return None

    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult:
        return await apply_overlay(sandbox, task.layout.solution_dir)


class OverlayAgent:
    """Applies one fixed overlay folder; `evalrun check` uses it for each `wrong/<name>/`."""

    def __init__(self, overlay: Path, name: str):
        self.overlay = overlay
        self.name = name

    def preflight(self) -> None:
        return None

    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult:
        return await apply_overlay(sandbox, self.overlay)
