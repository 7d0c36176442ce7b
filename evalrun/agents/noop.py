"""`agent=noop`: does nothing, so an honest verifier must fail it."""

from __future__ import annotations

from evalrun.agents.base import nothing_to_prepare
from evalrun.models.records import AgentResult
from evalrun.sandbox.base import Sandbox
from evalrun.tasks.loader import Task


class NoopAgent:
    name = "noop"
    prepared = nothing_to_prepare

    def preflight(self) -> None:
        return None

    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult:
        return AgentResult()
