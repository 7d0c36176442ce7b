"""The Agent contract: act on a task only through the sandbox, hand back an `AgentResult`."""

from __future__ import annotations

from typing import Protocol

from evalrun.records import AgentResult
from evalrun.sandbox.base import Sandbox
from evalrun.tasks import Task


class Agent(Protocol):
    """`run` may raise; the engine records the exception on the sample and still grades it."""

    name: str

    def preflight(self) -> None:
        """Raise `UsageError` before the run starts when the agent cannot work (missing API key,
        missing SDK, unreachable endpoint named in config)."""
        ...

    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult: ...
