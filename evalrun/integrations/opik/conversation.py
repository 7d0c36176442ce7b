"""A logged conversation as G-Eval input, the conversation-level judge, and what judging costs.

**What the judge sees**: the conversation as a JSON list of `{"role", "content"}` turns - the
shape Opik's own thread rules give their `{{context}}` variable - so an online rule made from the
same criterion reads the same thing. Each turn's text comes from the trace's input (user) and
output (assistant): a plain string is used as is; otherwise `input_key` / `output_key` (a dotted
path such as `messages.-1.content`) if set, else the first of the usual keys (input, question,
prompt, query, message, content, text / output, answer, response, completion, content, text), the
last message of a `messages` list, or the value as JSON. Long conversations keep their first and
last turns within INPUT_CHARS, with a note where turns were left out.

**Cost**: every model call the judge makes (G-Eval's chain of thought and each score) goes
through `metered_model`, which adds its cost to a `Meter`: the cost the provider reports, else
tokens times the judge price (`judge_price`, else litellm's bundled price for the model).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalrun.config.pricing import Price
from evalrun.integrations.opik.geval import geval_score
from evalrun.retry import retrying
from evalrun.run.judges import INPUT_CHARS

INPUT_KEYS = ("input", "question", "prompt", "query", "message", "user", "content", "text")
OUTPUT_KEYS = ("output", "answer", "response", "completion", "assistant", "content", "text")
TURN_CHARS = 6_000  # one turn's text
RETRY_MAX_WAIT_S = 30.0  # the longest wait between two tries of one judgement
Transforms = tuple[Callable, Callable]  # (trace input -> user text, trace output -> assistant text)


def _dig(value: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.lstrip("-").isdigit() and value:
            index = int(part)
            value = value[index] if -len(value) <= index < len(value) else None
        else:
            return None
    return value


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def field_text(value: Any, key: str | None, keys: Sequence[str]) -> str | None:
    """The message text inside a trace's input or output (None: nothing there)."""
    if value is None or isinstance(value, str):
        return value
    if key:
        return _as_text(_dig(value, key))
    if isinstance(value, dict):
        for name in keys:
            if value.get(name) not in (None, ""):
                return _as_text(value[name])
        messages = value.get("messages")
        if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
            return _as_text(messages[-1].get("content"))
    return _as_text(value) if value not in ({}, []) else None


def transforms(input_key: str | None, output_key: str | None) -> Transforms:
    """The `Transforms` for opik's conversation builder."""
    return (
        lambda value: field_text(value, input_key, INPUT_KEYS),
        lambda value: field_text(value, output_key, OUTPUT_KEYS),
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 16] + " ...[truncated]"


def render(conversation: Sequence[dict[str, Any]], limit: int = INPUT_CHARS) -> str:
    """The conversation as a JSON list of {role, content}; first and last turns kept in `limit`."""
    turns = [
        {"role": str(t.get("role", "")), "content": _clip(str(t.get("content", "")), TURN_CHARS)}
        for t in conversation
    ]
    text = json.dumps(turns, ensure_ascii=False)
    if len(text) <= limit:
        return text
    head, tail = turns[:1], turns[1:]
    while tail:
        tail = tail[1:]
        note = {"role": "system", "content": f"[{len(turns) - 1 - len(tail)} turns left out]"}
        text = json.dumps([*head, note, *tail], ensure_ascii=False)
        if len(text) <= limit:
            return text
    return _clip(json.dumps(head, ensure_ascii=False), limit)


@dataclass
class Meter:
    """Judge spending, shared by the worker threads."""

    price: Price | None
    spent_usd: float = 0.0
    calls: int = 0
    unpriced_calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, response: Any) -> None:
        usage = getattr(response, "usage", None)
        reported = getattr(usage, "cost", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        with self._lock:
            self.calls += 1
            if isinstance(reported, int | float):
                self.spent_usd += float(reported)
            elif self.price is not None:
                self.spent_usd += self.price.cost(prompt, completion)
            else:
                self.unpriced_calls += 1


def metered_model(judge: Any, meter: Meter) -> Any:
    """The judge's LiteLLM chat model (as offline), each completion's cost added to `meter`."""
    from opik.evaluation.models import LiteLLMChatModel

    class MeteredChatModel(LiteLLMChatModel):
        def generate_provider_response(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
            response = super().generate_provider_response(messages, **kwargs)
            meter.add(response)
            return response

    return judge.chat_model(MeteredChatModel)


def _failed(criterion: Any, attempts: int, exc: Exception) -> Any:
    from opik.evaluation.metrics import score_result

    first_line = next(iter(str(exc).strip().splitlines()), "")
    return score_result.ScoreResult(
        name=criterion.name,
        value=0.0,
        reason=f"judge {criterion.model} failed after {max(1, attempts)} "
        f"attempt(s): {type(exc).__name__}: {first_line}"[:500],
        scoring_failed=True,
    )


def _judged_metric(
    criterion: Any, attempts: int, backoff_s: float, judge_once: Callable, label: str
) -> Any:
    """An opik ConversationThreadMetric: `judge_once(conversation)` -> (value, reason), tried
    `attempts` times in all (`evalrun.retry`: exponential backoff, at most RETRY_MAX_WAIT_S
    between tries) and then returned as a failed score with the error as its reason - never 0."""
    from opik.evaluation.metrics import score_result
    from opik.evaluation.metrics.conversation.conversation_thread_metric import (
        ConversationThreadMetric,
    )

    class JudgedConversation(ConversationThreadMetric):
        def __init__(self) -> None:
            super().__init__(name=criterion.name, track=False)
            self._seen = threading.local()

        def last_text(self) -> str | None:
            """The text this worker thread's last `score` call showed the judge."""
            return getattr(self._seen, "text", None)

        def forget(self) -> None:
            self._seen.text = None

        def __str__(self) -> str:  # what opik writes into the evaluation trace's input
            return f"{label} {criterion.name} ({criterion.model}, {criterion.marker})"

        def score(self, conversation: Any, **_: Any) -> Any:
            self._seen.text = render(conversation)
            retryer = retrying(attempts, backoff_s, on_error=True, max_wait_s=RETRY_MAX_WAIT_S)
            try:
                value, reason = retryer(judge_once, conversation, self._seen.text)
            except Exception as exc:
                return _failed(criterion, attempts, exc)
            return score_result.ScoreResult(name=criterion.name, value=value, reason=reason)

    return JudgedConversation()


def conversation_metric(criterion: Any, geval: Any, attempts: int, backoff_s: float) -> Any:
    """The G-Eval criterion scoring the rendered conversation with `geval` (see _judged_metric)."""
    return _judged_metric(
        criterion, attempts, backoff_s, lambda _, text: geval_score(geval, text), "G-Eval"
    )


def builtin_metric(criterion: Any, model: Any, attempts: int, backoff_s: float) -> Any:
    """Opik's own conversation metric `criterion.metric` (`criteria.BUILTIN_METRICS`) on the
    judge's model, given the conversation as opik built it (see _judged_metric)."""
    from opik.evaluation.metrics import conversation

    from evalrun.integrations.opik.criteria import BUILTIN_METRICS

    cls = getattr(conversation, BUILTIN_METRICS[criterion.metric][0])
    metric = cls(model=model, name=criterion.name, track=False)

    def judge_once(turns: Any, _: str) -> tuple[float, str]:
        result = metric.score(turns)
        if result.scoring_failed:
            raise RuntimeError(result.reason or "the metric gave no score")
        return float(result.value), str(result.reason or "")

    return _judged_metric(criterion, attempts, backoff_s, judge_once, "opik metric")
