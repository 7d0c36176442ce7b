"""How evalrun's records read in Opik: pure functions from records to the SDK's keyword arguments.

Nothing here imports opik or talks to a server, so the mapping is testable on its own.

- A sample is one trace: input (task id, prompt, trial), output (the agent's final message, the
  verifier's verdict and the tail of verify.sh's output), metadata (phase durations, tokens, cost,
  attempts, error), tags (outcome, difficulty, task tags) and feedback scores (`pass` 0/1 - absent
  for a harness `error`, which has no verdict - `latency_s`, `cost_usd` when known, and every judge
  score that exists, with the judge's reason).
- Its spans are the phases that ran (`setup`, `agent`, `verify`), laid end to end from the
  sample's start (the engine measures each phase's duration, not its start), with the agent's
  tool calls as child spans of `agent`, again end to end.
- The run's headline metrics (`evalrun.analysis.metric_table`) become experiment-level scores;
  each one with an interval also gets its ends (`pass@1_ci95_low`, `pass@1_ci95_high`), since a
  score is one number.

Ids are deterministic (`stable_uuid7`), so sending the same sample twice names the same trace;
Opik wants UUID version 7, whose first 48 bits are a millisecond timestamp.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime
from typing import Any

from evalrun.analysis.metric_table import headline, metric_interval
from evalrun.models.records import Outcome, SampleRecord
from evalrun.models.summary import Summary

DATASET_ITEM_EPOCH_MS = 1_735_689_600_000  # 2025-01-01T00:00:00Z: dataset item ids carry no time
REASON_CHARS = 2_000


def stable_uuid7(ms: int, seed: str) -> str:
    """A UUIDv7 whose timestamp is `ms` and whose other bits come from sha256(`seed`)."""
    digest = hashlib.sha256(seed.encode()).digest()
    raw = bytearray(max(ms, 0).to_bytes(6, "big") + digest[:10])
    raw[6] = 0x70 | (raw[6] & 0x0F)  # version 7
    raw[8] = 0x80 | (raw[8] & 0x3F)  # RFC 4122 variant
    return str(uuid.UUID(bytes=bytes(raw)))


def dataset_item_id(project: str, dataset: str, task_id: str) -> str:
    return stable_uuid7(DATASET_ITEM_EPOCH_MS, f"dataset-item|{project}|{dataset}|{task_id}")


def trace_id(experiment_id: str, record: SampleRecord) -> str:
    seed = f"trace|{experiment_id}|{record.task_id}|{record.fingerprint}|{record.trial}"
    return stable_uuid7(int(record.started_at * 1000), seed)


def _when(epoch_s: float) -> datetime:
    return datetime.fromtimestamp(epoch_s, tz=UTC)


def latency_s(record: SampleRecord) -> float:
    return sum(v for v in record.phases.model_dump().values() if v is not None)


def feedback_scores(record: SampleRecord) -> list[dict[str, Any]]:
    """`pass`, `latency_s`, `cost_usd` and the judge scores that exist (None ones are left out:
    a failed judge is a missing score, not a 0; its reason stays in the trace metadata)."""
    scores: list[dict[str, Any]] = []
    if record.outcome is not Outcome.error:
        passed = float(record.outcome is Outcome.passed)
        scores.append({"name": "pass", "value": passed, "reason": record.reason})
    scores.append({"name": "latency_s", "value": round(latency_s(record), 6)})
    if record.agent.usage.cost_usd is not None:
        scores.append({"name": "cost_usd", "value": record.agent.usage.cost_usd})
    for name, value in sorted(record.scores.items()):
        if value is not None:
            reason = record.judge_reasons.get(name)
            scores.append({"name": name, "value": value, "reason": _clip(reason)})
    return scores


def _clip(text: str | None) -> str | None:
    return text if text is None or len(text) <= REASON_CHARS else text[:REASON_CHARS] + "..."


def trace_kwargs(
    record: SampleRecord, *, trace_id: str, prompt: str | None, tags: list[str], difficulty: str
) -> dict[str, Any]:
    """Keyword arguments for `opik.Opik.trace` describing one sample."""
    usage = record.agent.usage
    error_info = None
    if record.outcome is Outcome.error:
        error_info = {
            "exception_type": "HarnessError",
            "message": record.reason or "",
            "traceback": "",
        }
    return {
        "id": trace_id,
        "name": record.task_id,
        "start_time": _when(record.started_at),
        "end_time": _when(record.finished_at),
        "input": {"task_id": record.task_id, "prompt": prompt, "trial": record.trial},
        "output": {
            "output": record.agent.output,
            "outcome": record.outcome.value,
            "reason": record.reason,
            "verify_exit_code": record.verify_exit_code,
            "verify_output_tail": record.verify_output,
        },
        "metadata": {
            "run_id": record.run_id,
            "fingerprint": record.fingerprint,
            "phases_s": record.phases.model_dump(),
            "usage": usage.model_dump(),
            "cost_usd": usage.cost_usd,
            "attempts": record.attempts,
            "agent_error": record.agent.error,
            "timed_out_phase": record.timed_out_phase,
            "judge_reasons": record.judge_reasons,
        },
        "tags": [record.outcome.value, difficulty, *tags],
        "feedback_scores": feedback_scores(record),
        "error_info": error_info,
    }


def span_kwargs(record: SampleRecord, trace_id: str) -> list[dict[str, Any]]:
    """Keyword arguments for `Trace.span`, parents before children."""
    spans: list[dict[str, Any]] = []
    clock = record.started_at

    def add(name: str, seconds: float, parent: str | None = None, **extra: Any) -> str:
        span_id = stable_uuid7(int(clock * 1000), f"span|{trace_id}|{len(spans)}")
        spans.append(
            {
                "id": span_id,
                "parent_span_id": parent,
                "name": name,
                "start_time": _when(clock),
                "end_time": _when(clock + seconds),
                **extra,
            }
        )
        return span_id

    phases = record.phases
    if phases.setup is not None:
        add("setup", phases.setup, type="general")
        clock += phases.setup
    if phases.agent is not None:
        usage = record.agent.usage
        agent_error = record.agent.error
        agent_span = add(
            "agent",
            phases.agent,
            type="general",
            output={"output": record.agent.output},
            usage={
                "prompt_tokens": usage.input_tokens,
                "completion_tokens": usage.output_tokens,
                "total_tokens": usage.input_tokens + usage.output_tokens,
            },
            total_cost=usage.cost_usd,
            metadata={"requests": usage.requests, "timed_out": record.timed_out_phase == "agent"},
            error_info=(
                {"exception_type": "AgentError", "message": agent_error, "traceback": ""}
                if agent_error
                else None
            ),
        )
        agent_end = clock + phases.agent
        for step in record.agent.trajectory:
            seconds = step.duration_s or 0.0
            add(
                step.name,
                seconds,
                parent=agent_span,
                type="tool",
                input=dict(step.args),
                output={"result": step.result},
                error_info=(
                    {"exception_type": "ToolError", "message": step.error, "traceback": ""}
                    if step.error
                    else None
                ),
            )
            clock += seconds
        clock = agent_end
    if phases.verify is not None:
        add(
            "verify",
            phases.verify,
            type="general",
            output={
                "outcome": record.outcome.value,
                "exit_code": record.verify_exit_code,
                "output_tail": record.verify_output,
            },
        )
    return spans


def experiment_scores(summary: Summary) -> dict[str, float]:
    """The run's headline metrics (`evalrun.analysis.metric_table`) for the experiment row, each
    with the ends of its 95% interval when it has one; a value that is undefined is left out."""
    values: dict[str, float | None] = {}
    for name, value in headline(summary).items():
        values[name] = value
        est = metric_interval(summary, name)
        if est is not None:
            values[f"{name}_ci95_low"], values[f"{name}_ci95_high"] = est.low, est.high
    return {name: float(v) for name, v in values.items() if v is not None}
