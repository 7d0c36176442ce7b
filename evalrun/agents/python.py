"""`agent=python`: evaluate your own agent, written in Python - the agent you are building.

    evalrun agent=python agent.factory=my_pkg.my_module:make_agent agent.kwargs.model=gpt-4o

`factory` names a callable (a function or a class) as `module:attribute`; it is called with
`agent.kwargs` and must return an object with an `async def run(task, sandbox)` method (the
`evalrun.agents.Agent` protocol). `run` may return an `AgentResult`, a dict of its fields, or
just the final answer as a string. An optional `preflight()` on the object is called before the
run starts, like evalrun's own agents. The current directory is put on `sys.path`, so a module
next to where you run evalrun imports without installing it. A task's MCP servers are
`task.spec.mcp_servers` (`evalrun.tasks.base.McpServer`: name, transport, command and args of a
stdio server to start in the sandbox, or the url of an HTTP one); using them is the agent's job.

A factory that cannot be imported, found, called, or that returns something without an async
`run` is a `UsageError` naming the factory string, raised before any sample runs.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Mapping
from typing import Any

from evalrun.agents.base import nothing_to_prepare
from evalrun.errors import UsageError, bad_value
from evalrun.models.records import AgentResult
from evalrun.sandbox.base import Sandbox
from evalrun.tasks.loader import Task

EXAMPLE = "agent.factory=my_pkg.my_module:make_agent"


def load_factory(spec: str) -> Any:
    """Import `module:attribute` (the attribute may be dotted); `UsageError` when that fails."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise bad_value("agent.factory", "'package.module:callable'", spec)
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        target: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise UsageError(
                f"agent.factory={spec!r}: no module named {exc.name!r} (not installed, and not "
                f"in the current directory {cwd})"
            ) from exc
        raise UsageError(f"agent.factory={spec!r}: importing {module_name} failed: {exc}") from exc
    except Exception as exc:
        raise UsageError(
            f"agent.factory={spec!r}: importing {module_name} failed: {type(exc).__name__}: {exc}"
        ) from exc
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise UsageError(
                f"agent.factory={spec!r}: {module_name} has no attribute {attribute!r}"
            )
        target = getattr(target, part)
    if not callable(target):
        raise UsageError(f"agent.factory={spec!r}: {attribute} is not callable")
    return target


def as_result(value: Any) -> AgentResult:
    """Accept an AgentResult, a dict of its fields, or a plain final-answer string."""
    if isinstance(value, AgentResult):
        return value
    if isinstance(value, str):
        return AgentResult(output=value)
    if isinstance(value, Mapping):
        return AgentResult.model_validate(dict(value))
    raise TypeError(
        f"the agent's run() returned {type(value).__name__}; expected AgentResult, dict or str"
    )


class PythonAgent:
    """See the module docstring. The factory is called once; its agent runs every sample."""

    prepared = nothing_to_prepare

    def __init__(self, factory: str | None = None, kwargs: Mapping[str, Any] | None = None):
        self.factory = factory or ""
        self.kwargs = dict(kwargs or {})
        self.name = f"python:{self.factory}" if self.factory else "python"
        self._agent: Any = None

    def _build(self) -> Any:
        if not self.factory:
            raise UsageError(f"agent.factory: agent=python needs a factory, e.g. {EXAMPLE}")
        make = load_factory(self.factory)
        try:
            agent = make(**self.kwargs)
        except Exception as exc:
            raise UsageError(
                f"agent.factory={self.factory!r}: calling it with agent.kwargs="
                f"{self.kwargs} failed: {type(exc).__name__}: {exc}"
            ) from exc
        run = getattr(agent, "run", None)
        if not callable(run) or not inspect.iscoroutinefunction(run):
            raise UsageError(
                f"agent.factory={self.factory!r} returned {type(agent).__name__}, which has no "
                "`async def run(task, sandbox)` method"
            )
        return agent

    def preflight(self) -> None:
        self._agent = self._build()
        own = getattr(self._agent, "preflight", None)
        if not callable(own):
            return
        try:
            own()
        except UsageError:
            raise
        except Exception as exc:
            raise UsageError(
                f"agent.factory={self.factory!r}: the agent's preflight() failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult:
        if self._agent is None:
            self._agent = self._build()
        return as_result(await self._agent.run(task, sandbox))
