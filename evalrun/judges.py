"""LLM judges: Opik's G-Eval through LiteLLM, scoring samples on each task's own criteria.

`judge=<option>` (conf/judge/) picks the judge model; a task's `judges:` list (name,
task_introduction, evaluation_criteria) says what to score. Every scored sample (pass or fail;
a harness `error` has nothing to judge) of a task with judges gets one 0-1 score per judge in
`SampleRecord.scores[name]` and the judge's reason in `SampleRecord.judge_reasons[name]`. Judges
never change the oracle's verdict. A judgement that fails (provider error, unparseable answer) is
tried again `max_retries` times - on top of the SDK's own three attempts per model call - and
then recorded as a missing score (None) with the error as its reason, never as 0.

What the judge sees: the task prompt, the agent's final message, the files its tool calls wrote
or edited, and the tool calls themselves (name and arguments, bounded) - which carry the content
written. No diff is computed: an agent that reports no trajectory is judged on its message alone.

Which model: `judge=default` follows `provider` (gemini -> `gemini/<model>`, openrouter ->
`openrouter/<model>`, anything else -> `openai/<model>` at the provider's base_url, with its key
and headers); named options set a LiteLLM model string and the variable holding its key.
`EVAL_JUDGE_MODEL` replaces the model (the options interpolate it, so the resolved config shows
the model actually used).

opik and litellm are imported on the first judgement, in a worker thread. Exercised against a
local OpenAI-compatible stand-in server, not a paid model.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import threading
from typing import Any, Protocol

from evalrun.errors import UsageError
from evalrun.providers import NO_KEY, Provider
from evalrun.records import Outcome, SampleRecord
from evalrun.tasks import JudgeSpec, Task

INPUT_CHARS = 24_000  # the whole text handed to the judge
STEP_CHARS = 1_500  # one tool call's arguments and result
WRITING_TOOLS = ("write", "edit", "create", "patch", "replace", "append")
PATH_ARGS = ("path", "file_path", "filename", "file")


class Judge(Protocol):
    name: str

    def preflight(self) -> None:
        """Raise `UsageError` before the run when judging cannot work (key, SDK, model)."""
        ...

    async def judge(self, task: Task, record: SampleRecord) -> SampleRecord:
        """The record with judge scores added; never raises, never changes the outcome."""
        ...


class NoJudge:
    """`judge=none`: no scores."""

    def __init__(self, name: str = "none"):
        self.name = name

    def preflight(self) -> None:
        return None

    async def judge(self, task: Task, record: SampleRecord) -> SampleRecord:
        return record


def build_judge(node: Any) -> Judge:
    """Instantiate the `judge` config group (absent: no judge); a bad option is a UsageError."""
    if node is None:
        return NoJudge()
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    try:
        return instantiate(node)
    except InstantiationException as exc:
        raise UsageError(f"judge: could not build {node.get('_target_')}: {exc}") from exc


def provider_route(provider: Provider) -> tuple[str, str | None]:
    """(LiteLLM model string, api_base) for a provider's model."""
    if provider.name == "gemini":
        return f"gemini/{provider.model}", None  # LiteLLM's native Gemini route
    if provider.api == "openrouter":
        return f"openrouter/{provider.model}", provider.base_url
    return f"openai/{provider.model}", provider.base_url


def _vendor(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else ""


class GEvalJudge:
    """G-Eval through LiteLLM; built by Hydra from conf/judge/<option>.yaml."""

    def __init__(
        self,
        name: str,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        headers_env: dict[str, str] | None = None,
        vendor: str | None = None,
        provider: Provider | None = None,
        max_retries: int = 1,
        retry_backoff_s: float = 2.0,
        timeout_s: float = 120.0,
        temperature: float = 0.0,
    ):
        self.name = name
        self.provider = provider
        self.model = model or None
        self.base_url = base_url or None
        self.api_key_env = api_key_env or None
        self.headers_env = dict(headers_env or {})
        if provider is not None and (self.model or provider.model):
            routed, routed_base = provider_route(provider)
            if self.model is None or _vendor(self.model) == _vendor(routed):
                self.model = self.model or routed
                self.base_url, self.api_key_env = routed_base, provider.api_key_env
                self.headers_env = dict(provider.headers_env)
        elif vendor and self.model and _vendor(self.model) != vendor:
            # EVAL_JUDGE_MODEL named another vendor: never send this option's key elsewhere.
            self.base_url, self.api_key_env, self.headers_env = None, None, {}
        self.max_retries = max(0, max_retries)
        self.retry_backoff_s = retry_backoff_s
        self.timeout_s = timeout_s
        self.temperature = temperature
        self._metrics: dict[JudgeSpec, Any] = {}
        self._lock = threading.Lock()

    def preflight(self) -> None:
        missing = [m for m in ("opik", "litellm") if importlib.util.find_spec(m) is None]
        if missing:
            raise UsageError(
                f"judge={self.name} needs {', '.join(missing)}: pip install 'evalrun[opik]'"
            )
        if not self.model:
            follows = f" (it follows provider={self.provider.name}: set provider.model)"
            raise UsageError(
                f"judge.model: judge={self.name} needs a LiteLLM model string such as "
                "openai/gpt-4o-mini, or EVAL_JUDGE_MODEL" + (follows if self.provider else "")
            )
        wanted = [self.api_key_env] if self.api_key_env else []
        missing_vars = [v for v in [*wanted, *self.headers_env.values()] if not os.environ.get(v)]
        if missing_vars:
            raise UsageError(
                f"judge={self.name} (model {self.model}) needs the environment variable(s) "
                f"{', '.join(missing_vars)}; export them before running, or use judge=none"
            )

    async def judge(self, task: Task, record: SampleRecord) -> SampleRecord:
        if not task.spec.judges or record.outcome is Outcome.error:
            return record
        text = judge_input(task, record)
        scores, reasons = dict(record.scores), dict(record.judge_reasons)
        for spec in task.spec.judges:
            scores[spec.name], reasons[spec.name] = await self._judge_one(spec, text)
        return record.model_copy(update={"scores": scores, "judge_reasons": reasons})

    async def _judge_one(self, spec: JudgeSpec, text: str) -> tuple[float | None, str]:
        attempts = 1 + self.max_retries
        error = "no attempt made"
        for attempt in range(attempts):
            if attempt:
                await asyncio.sleep(self.retry_backoff_s * 2 ** (attempt - 1))
            try:
                return await asyncio.to_thread(self._score, spec, text)
            except Exception as exc:
                first_line = next(iter(str(exc).strip().splitlines()), "")
                error = f"{type(exc).__name__}: {first_line}"[:500]
        return None, f"judge {self.model} failed after {attempts} attempt(s): {error}"

    def _score(self, spec: JudgeSpec, text: str) -> tuple[float, str]:
        return geval_score(self._metric(spec), text)

    def _metric(self, spec: JudgeSpec) -> Any:
        """One GEval per judge spec, built on first use (the import of litellm is slow)."""
        with self._lock:
            if spec not in self._metrics:
                self._metrics[spec] = self._build_metric(spec)
            return self._metrics[spec]

    def _build_metric(self, spec: JudgeSpec) -> Any:
        return self.geval(spec, self.chat_model())

    def geval(self, spec: JudgeSpec, model: Any) -> Any:
        """Opik's GEval for `spec`, calling `model` (see `chat_model`)."""
        from opik.evaluation.metrics import GEval

        return GEval(
            task_introduction=spec.task_introduction,
            evaluation_criteria=spec.evaluation_criteria,
            model=model,
            name=spec.name,
            track=False,
        )

    def chat_model(self, model_class: type | None = None) -> Any:
        """The LiteLLM chat model the judge calls: opik's `LiteLLMChatModel`, or `model_class`
        (a subclass of it, e.g. one that meters cost) built with the same settings."""
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map download
        import litellm
        from opik.evaluation.models import LiteLLMChatModel

        litellm.suppress_debug_info = True
        if "OPIK_CONSOLE_LOGGING_LEVEL" not in os.environ:
            logging.getLogger("opik").setLevel(logging.CRITICAL)  # failures land on the record
        kwargs: dict[str, Any] = {"temperature": self.temperature, "timeout": self.timeout_s}
        kwargs["max_retries"] = 0  # the SDK's own retry loop and ours are enough
        if self.base_url:
            kwargs["api_base"] = self.base_url
        if self.api_key_env:
            kwargs["api_key"] = os.environ.get(self.api_key_env, "")
        elif self.base_url:
            kwargs["api_key"] = NO_KEY  # a keyless endpoint; the OpenAI client insists on one
        headers = {h: os.environ.get(var, "") for h, var in self.headers_env.items()}
        if headers:
            kwargs["extra_headers"] = headers
        return (model_class or LiteLLMChatModel)(model_name=self.model or "", track=False, **kwargs)


def geval_score(metric: Any, text: str) -> tuple[float, str]:
    """(score 0-1, reason) from a GEval metric; raises when it gave no usable score."""
    result = metric.score(output=text)
    value = float(result.value)
    if getattr(result, "scoring_failed", False) or not 0.0 <= value <= 1.0:
        raise ValueError(f"judge returned no usable score ({value!r}: {result.reason})")
    return value, str(result.reason or "")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 20] + " ...[truncated]"


def written_files(record: SampleRecord) -> list[str]:
    """Paths the agent's writing tool calls touched, in first-touched order."""
    seen: dict[str, None] = {}
    for step in record.agent.trajectory:
        if any(word in step.name.lower() for word in WRITING_TOOLS):
            for key in PATH_ARGS:
                value = step.args.get(key)
                if isinstance(value, str) and value:
                    seen.setdefault(value, None)
    return list(seen)


def judge_input(task: Task, record: SampleRecord) -> str:
    """The text G-Eval scores: prompt, final message, files written, tool calls (bounded)."""
    agent = record.agent
    parts = [
        "## Task given to the agent\n" + task.spec.prompt.strip(),
        "## The agent's final message\n" + (agent.output.strip() or "(empty)"),
    ]
    if agent.error:
        parts.append("## The agent's run ended with an error\n" + agent.error)
    files = written_files(record)
    parts.append(
        "## Files the agent wrote or edited (from its tool calls)\n"
        + ("\n".join(f"- {f}" for f in files) if files else "(none recorded)")
    )
    steps = []
    for n, step in enumerate(agent.trajectory, 1):
        args = json.dumps(step.args, ensure_ascii=False, default=str)
        line = f"{n}. {step.name} {args}"
        if step.error:
            line += f"\n   error: {step.error}"
        elif step.result:
            line += f"\n   result: {step.result}"
        steps.append(_clip(line, STEP_CHARS))
    if steps:
        parts.append(f"## The agent's tool calls ({len(steps)}, in order)\n" + "\n".join(steps))
    return _clip("\n\n".join(parts), INPUT_CHARS)
