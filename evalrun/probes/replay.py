"""Replay a probe's scripted run through the coder agent's loop and tools - no model, no network.

A scripted run (`scripted/good.yaml`, `scripted/bad.yaml`; format in `evalrun.probes.spec`)
stands in for the model: pydantic-ai's `FunctionModel` returns the next scripted turn each time
the agent asks the model. Everything else is what `agent=coder` does - the same instructions,
the same `SandboxTools` (read, write, edit, bash, grep, ls) acting on the real sandbox, the same
sequential tool execution and `max_steps` request limit - so the trajectory, the workspace and
the final output are produced exactly as a model-driven run would produce them.

What differs from `CoderAgent.run` is only where the model comes from: `CoderAgent` builds an
OpenAI-compatible client from its provider and has no seam to hand it another model, so the loop
is assembled here from the coder's own parts. A script that runs out before an answer ends the
run with an error on the result (the sample is still graded, and probably fails).

pydantic-ai is imported inside `replay`, never when this module is imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalrun.agents.base import nothing_to_prepare
from evalrun.models.records import AgentResult, Usage
from evalrun.sandbox.base import Sandbox
from evalrun.tasks.loader import Task


class ScriptExhausted(Exception):
    """The agent asked the model for another turn after the script's last one."""


async def replay(script: Path, prompt: str, max_steps: int, sandbox: Sandbox) -> AgentResult:
    """Run the coder agent loop on `prompt` with `script` playing the model."""
    from pydantic_ai import Agent, Tool
    from pydantic_ai.exceptions import AgentRunError
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    from evalrun.agents.coder.agent import INSTRUCTIONS
    from evalrun.agents.coder.tools import SandboxTools
    from evalrun.probes.spec import load_script

    turns = load_script(script)
    served = 0

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        nonlocal served
        if served >= len(turns):
            raise ScriptExhausted(f"{script.name} has {len(turns)} turns; the agent asked for more")
        turn = turns[served]
        served += 1
        if turn.answer is not None:
            return ModelResponse(parts=[TextPart(turn.answer)])
        return ModelResponse(
            parts=[
                ToolCallPart(name, args, tool_call_id=f"call-{served}-{i}")
                for i, (name, args) in enumerate(turn.calls)
            ]
        )

    tools = SandboxTools(sandbox)
    agent = Agent(
        FunctionModel(respond, model_name=f"replay:{script.parent.parent.name}/{script.stem}"),
        instructions=INSTRUCTIONS,
        tools=[Tool(fn, sequential=True) for fn in tools.functions()],
        retries=3,
    )
    output, error = "", None
    try:
        result = await agent.run(prompt, usage_limits=UsageLimits(request_limit=max_steps))
        output = str(result.output)
        requests = result.usage.requests
    except (AgentRunError, ScriptExhausted) as exc:
        error = f"{type(exc).__name__}: {exc}"
        requests = served
    return AgentResult(
        output=output,
        trajectory=tools.trajectory,
        usage=Usage(requests=requests, cost_source="scripted replay: no model, no cost"),
        error=error,
    )


class ReplayAgent:
    """Plays a probe's `runs/<run>.yaml`; `evalrun check suite=probes` runs `good` and `bad`."""

    prepared = nothing_to_prepare

    def __init__(self, run: str):
        self.run_name = run
        self.name = f"replay-{run}"

    def preflight(self) -> None:
        return None

    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult:
        script = task.format.layout.run_file(self.run_name)  # type: ignore[attr-defined]
        return await replay(script, task.spec.prompt, task.spec.max_steps, sandbox)
