"""The Agent contract: act on a task only through the sandbox, hand back an `AgentResult`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

from evalrun.models.records import AgentResult
from evalrun.sandbox.base import Sandbox, SandboxBackend, SandboxSpec
from evalrun.tasks.loader import Task


@dataclass(frozen=True)
class RunScope:
    """What an agent's run-long preparation hands the runner: `stop_reason()` says why no new
    sample may start (a run budget reached), or None; `cannot_host(spec)` says why the agent
    cannot run in a sandbox of a task's `spec` at all (e.g. a task's prebuilt image lacks what
    the agent needs), or None - asked once per task before the first sample. `mcp_refusal`
    says why the agent cannot give a task's MCP servers (`TaskSpec.mcp_servers`) to what it
    runs, so a task that has some is skipped; None: it can, or (like the oracle) needs none."""

    stop_reason: Callable[[], str | None] = lambda: None
    cannot_host: Callable[[SandboxSpec], str | None] = lambda spec: None
    mcp_refusal: str | None = None


class Agent(Protocol):
    """`run` may raise; the engine records the exception on the sample and still grades it."""

    name: str

    def preflight(self) -> None:
        """Raise `UsageError` before the run starts when the agent cannot work (missing API key,
        missing SDK, unreachable endpoint named in config)."""
        ...

    def prepared(self, backend: SandboxBackend) -> AbstractContextManager[RunScope]:
        """Around the whole run, after preflight: install what the agent needs, start what it
        needs (the model gateway) and make both visible on `backend`; undone on exit. May
        raise `UsageError`. Agents that need nothing use `nothing_to_prepare`."""
        ...

    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult: ...


@contextmanager
def nothing_to_prepare(self: object, backend: SandboxBackend) -> Iterator[RunScope]:
    """`prepared` for agents that need nothing around the run."""
    yield RunScope()


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
