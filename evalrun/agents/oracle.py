"""`agent=oracle`: applies a task's gold solution, so an honest verifier must pass it.

What "the gold solution" is belongs to the task's format (`TaskFormat.solve`): the solution/
overlay (plus its solve.sh) for evalrun tasks, solution/solve.sh run in the workspace for Harbor
tasks. `OverlayAgent` applies one fixed overlay folder the way evalrun's format does;
`evalrun check` uses it for each `wrong/<name>/` near miss.
"""

from __future__ import annotations

from pathlib import Path

from evalrun.agents.base import nothing_to_prepare
from evalrun.models.records import AgentResult
from evalrun.sandbox.base import Sandbox
from evalrun.tasks.loader import Task
from evalrun.tasks.native import apply_overlay


class OracleAgent:
    name = "oracle"
    prepared = nothing_to_prepare

    def preflight(self) -> None:
        return None

    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult:
        return await task.format.solve(sandbox)


class OverlayAgent:
    """Applies one fixed overlay folder; `evalrun check` uses it for each `wrong/<name>/`."""

    def __init__(self, overlay: Path, name: str):
        self.overlay = overlay
        self.name = name

    prepared = nothing_to_prepare

    def preflight(self) -> None:
        return None

    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult:
        return await apply_overlay(sandbox, self.overlay)
