"""`agent=noop`: does nothing, so an honest oracle must fail it."""

from __future__ import annotations

from evalrun.records import AgentResult
from evalrun.sandbox.base import Sandbox
from evalrun.tasks import Task


class NoopAgent:
    name = "noop"

    def preflight(self) -> None:
        return None

    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult:
        return AgentResult()
