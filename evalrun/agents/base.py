"""The Agent contract: act on a task only through the sandbox, hand back an `AgentResult`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
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


_PROGRESS: ContextVar[AgentResult | None] = ContextVar("evalrun_agent_progress", default=None)


def progress() -> AgentResult | None:
    """The result-so-far of the sample this agent run belongs to, or None outside the engine.

    An agent that fills it as it goes (steps appended, usage updated) keeps what it did and what
    it cost when the engine's agent timeout cancels it: the engine records this on the sample
    instead of an empty result. The engine sets a fresh one per agent run (a context variable, so
    concurrent samples never share it).
    """
    return _PROGRESS.get()


@contextmanager
def tracking_progress() -> Iterator[AgentResult]:
    """Give the agent run started inside this block a fresh result-so-far; yield it."""
    so_far = AgentResult()
    token = _PROGRESS.set(so_far)
    try:
        yield so_far
    finally:
        _PROGRESS.reset(token)
