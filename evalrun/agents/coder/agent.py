"""`agent=coder`: evalrun's own coding agent - a pydantic-ai agent whose tools call the sandbox.

The task's prompt is the user message; the tools (read, write, edit, bash, grep, ls; see
`coder_tools`) act only through the Sandbox API, so the agent runs on every backend. The model
comes from the `provider` config group (`coder_model.build_model`).

Limits and failures:
- `task.spec.max_steps` caps the number of model requests (pydantic-ai's `request_limit`);
  hitting it ends the run with an error on the result, and the sample is still graded.
- A model request that fails with a rate limit, a 5xx or a timeout is retried by the OpenAI
  client with backoff (`max_retries`); when it still fails, the error is recorded on the result
  (`AgentResult.error`) together with everything done so far, and the sample is graded.
- A missing key, SDK or setting is a `UsageError` from `preflight()`, before the run starts.
- A task with MCP servers is skipped (`NO_MCP` says why).

pydantic-ai is imported inside `run`, never when this module is imported.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from evalrun.agents.base import RunScope, progress
from evalrun.agents.coder.model import build_model, cost_of, default_settings
from evalrun.agents.coder.tools import SandboxTools
from evalrun.config.providers import Provider
from evalrun.config.schema import CoderAgentConf
from evalrun.errors import UsageError, bad_value
from evalrun.extras import install_hint
from evalrun.models.records import AgentResult, ModelCall, Usage
from evalrun.sandbox.base import Sandbox, SandboxBackend
from evalrun.tasks.loader import Task

if TYPE_CHECKING:
    from pydantic_ai.settings import ModelSettings

INSTRUCTIONS = """\
You are a careful software engineer working in a code repository; the current directory is its
root and every path you pass to a tool is relative to it. Use the tools to look around, make the
change the user asks for, and check it (run the code or its tests with bash when that helps).
Change only what the request needs. Edit files with `edit` (exact text replacement) or `write`.
When you are done, reply with a short summary of what you changed, or with the answer if the
user asked a question."""


def _describe(exc: Exception, max_steps: int) -> str:
    """A one-line account of why the run stopped, for `AgentResult.error`."""
    from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError, UsageLimitExceeded

    if isinstance(exc, UsageLimitExceeded):
        return f"max_steps reached: the task allows {max_steps} model requests ({exc})"
    if isinstance(exc, ModelHTTPError):
        body = str(exc.body)[:300] if exc.body is not None else ""
        return f"model request failed after retries: HTTP {exc.status_code} {body}".strip()
    if isinstance(exc, ModelAPIError):
        return f"model request failed after retries: {exc.message}"
    return f"{type(exc).__name__}: {exc}"


NO_MCP = (
    "agent=coder has no MCP client: its model runs on the host, and a task's stdio server runs "
    "in the sandbox, which it reaches only by whole commands (no stream to talk MCP over)"
)


class CoderAgent:
    """See the module docstring. Constructed at plan time: cheap, reads no secret."""

    name = "coder"

    @contextmanager
    def prepared(self, backend: SandboxBackend) -> Iterator[RunScope]:
        yield RunScope(mcp_refusal=NO_MCP)

    def __init__(
        self,
        provider: Provider,
        max_retries: int = CoderAgentConf.max_retries,  # defaults: their home is the schema
        request_timeout_s: float = CoderAgentConf.request_timeout_s,
        tool_retries: int = CoderAgentConf.tool_retries,
        bash_timeout_s: float = CoderAgentConf.bash_timeout_s,
        output_chars: int = CoderAgentConf.output_chars,
        instructions: str | None = None,
        model_settings: Mapping[str, Any] | None = None,
    ):
        self.provider = provider
        self.max_retries = max_retries
        self.request_timeout_s = request_timeout_s
        self.tool_retries = tool_retries
        self.bash_timeout_s = bash_timeout_s
        self.output_chars = output_chars
        self.instructions = instructions or INSTRUCTIONS
        self.model_settings = dict(model_settings or {})

    def preflight(self) -> None:
        if not isinstance(self.provider, Provider):
            raise bad_value("agent.provider", "a provider config", self.provider)
        for module in ("pydantic_ai", "openai"):
            if importlib.util.find_spec(module) is None:
                raise UsageError(
                    f"agent=coder needs the {module} package: {install_hint('agents')}"
                )
        self.provider.check()
        if self.provider.api in ("anthropic", "gemini-native"):
            raise UsageError(
                f"agent=coder speaks OpenAI Chat Completions; provider={self.provider.name} "
                f"(provider.api={self.provider.api}) is for the agent CLI presets. Use "
                "provider=openai, gemini, openrouter or modal"
            )

    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult:
        from pydantic_ai import Agent, Tool
        from pydantic_ai.exceptions import AgentRunError
        from pydantic_ai.usage import UsageLimits

        tools = SandboxTools(
            sandbox, output_chars=self.output_chars, bash_timeout_s=self.bash_timeout_s
        )
        live = progress()  # filled as we go: kept by the engine if its timeout cancels us
        if live is not None:
            tools.trajectory = live.trajectory
        model, client = build_model(
            self.provider, max_retries=self.max_retries, timeout_s=self.request_timeout_s
        )
        agent = Agent(
            model,
            instructions=self.instructions,
            tools=[Tool(fn, sequential=True) for fn in tools.functions()],
            retries=self.tool_retries,
            model_settings=cast(
                "ModelSettings", {**default_settings(self.provider), **self.model_settings}
            ),
        )
        max_steps = task.spec.max_steps
        output, error = "", None
        try:
            async with agent.iter(
                task.spec.prompt, usage_limits=UsageLimits(request_limit=max_steps)
            ) as run:
                try:
                    async for node in run:
                        if Agent.is_call_tools_node(node):  # its tools run next: their tokens
                            used = node.model_response.usage
                            tools.turn_tokens = (used.input_tokens, used.output_tokens)
                            tools.turn_calls = [
                                (part.tool_name, part.tool_call_id, part.args_as_dict())
                                for part in node.model_response.tool_calls
                            ]
                        if live is not None:
                            live.usage = self._usage(run.usage, run.all_messages())
                    if run.result is not None:
                        output = str(run.result.output)
                except AgentRunError as exc:
                    error = _describe(exc, max_steps)
                usage = self._usage(run.usage, run.all_messages())
                calls = self._model_calls(run.all_messages())
        finally:
            await client.close()
        return AgentResult(
            output=output,
            trajectory=tools.trajectory,
            usage=usage,
            model_calls=calls,
            error=error,
        )

    def _model_calls(self, messages: list[Any]) -> list[ModelCall]:
        """Each model response as pydantic-ai counted it, priced like the run's usage."""
        from pydantic_ai.messages import ModelResponse

        return [
            ModelCall(
                model=response.model_name,
                input_tokens=response.usage.input_tokens,
                output_tokens=response.usage.output_tokens,
                cache_read_tokens=response.usage.cache_read_tokens,
                cache_write_tokens=response.usage.cache_write_tokens,
                cost_usd=cost_of([response], self.provider)[0],
                tool_call_ids=[part.tool_call_id for part in response.tool_calls],
                counted_by="pydantic-ai",
            )
            for response in messages
            if isinstance(response, ModelResponse)
        ]

    def _usage(self, run_usage: Any, messages: list[Any]) -> Usage:
        """Tokens pydantic-ai counted so far, priced from the model responses received."""
        from pydantic_ai.messages import ModelResponse

        responses = [m for m in messages if isinstance(m, ModelResponse)]
        cost, cost_source = cost_of(responses, self.provider)
        return Usage(
            requests=run_usage.requests,
            input_tokens=run_usage.input_tokens,
            output_tokens=run_usage.output_tokens,
            cache_read_tokens=run_usage.cache_read_tokens,
            cache_write_tokens=run_usage.cache_write_tokens,
            cost_usd=cost,
            cost_source=cost_source,
        )
