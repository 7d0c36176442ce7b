"""LLM judges through Opik's G-Eval and LiteLLM: `judge=default` and the named judge options.

The judge seam (`evalrun.run.judges`: the `Judge` protocol, what a judge sees) is Opik-free; this is
the judge that scores. A judgement that fails (provider error, unparseable answer) is tried
again `max_retries` times (`evalrun.retry`) - on top of the SDK's own attempts per model call -
and then recorded as a missing score (None) with the error as its reason, never as 0.

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
import os
import threading
from typing import Any

from evalrun.config.providers import NO_KEY, Provider
from evalrun.config.schema import GEvalJudgeConf
from evalrun.errors import UsageError
from evalrun.extras import install_hint
from evalrun.models.records import Outcome, SampleRecord
from evalrun.retry import async_retrying
from evalrun.run.judges import judge_input
from evalrun.tasks.base import JudgeSpec
from evalrun.tasks.loader import Task


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
        max_retries: int = GEvalJudgeConf.max_retries,  # defaults: their home is the schema
        retry_backoff_s: float = GEvalJudgeConf.retry_backoff_s,
        timeout_s: float = GEvalJudgeConf.timeout_s,
        temperature: float = GEvalJudgeConf.temperature,
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
                f"judge={self.name} needs {', '.join(missing)}: {install_hint('opik')}"
            )
        if not self.model:
            follows = ""
            if self.provider is not None:
                follows = f" (it follows provider={self.provider.name}: set provider.model)"
            raise UsageError(
                f"judge.model: judge={self.name} needs a LiteLLM model string such as "
                "openai/gpt-4o-mini, or EVAL_JUDGE_MODEL" + follows
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
        retryer = async_retrying(1 + self.max_retries, self.retry_backoff_s, on_error=True)
        try:
            return await retryer(asyncio.to_thread, self._score, spec, text)
        except Exception as exc:
            first_line = next(iter(str(exc).strip().splitlines()), "")
            error = f"{type(exc).__name__}: {first_line}"[:500]
            attempts = retryer.statistics.get("attempt_number", 1)
            return None, f"judge {self.model} failed after {attempts} attempt(s): {error}"

    def _score(self, spec: JudgeSpec, text: str) -> tuple[float, str]:
        return geval_score(self._metric(spec), text)

    def _metric(self, spec: JudgeSpec) -> Any:
        """One GEval per judge spec, built on first use (the import of litellm is slow)."""
        with self._lock:
            if spec not in self._metrics:
                self._metrics[spec] = self.geval(spec, self.chat_model())
            return self._metrics[spec]

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

        from evalrun.integrations.opik.export import quiet_sdk_logging

        litellm.suppress_debug_info = True
        quiet_sdk_logging()  # a judge's failures land on the record
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
