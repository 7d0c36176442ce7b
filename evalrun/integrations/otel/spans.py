"""A run as OpenTelemetry spans, made after the fact from its records with explicit start and end
times (a run is traced the same way whether it just ended or ended long ago).

One trace per run:

```
evalrun.run <run id>                       the run: agent, model, sandbox, samples, passes, pass@1
  evalrun.sample <task>#<trial>            its outcome and reason, usage and cost (status ERROR:
                                           a harness error)
    evalrun.setup / evalrun.agent / evalrun.verify
                                           each phase that ran, laid end to end from the sample's
                                           start (a record keeps each phase's length, not its
                                           start)
      chat <model>                         under evalrun.agent: each model request the gateway
                                           metered, at the time it was forwarded, with GenAI
                                           (gen_ai.*) and OpenInference (llm.*) attributes
```

A model request from a run made before the gateway kept its time is placed at the start of the
agent phase with no length. The spans are collected in memory (`InMemorySpanExporter`) and handed
to the caller's exporter in one call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalrun.models.records import ModelCall, Outcome, SampleRecord
from evalrun.models.summary import PHASES
from evalrun.rundir.log import RunLog
from evalrun.rundir.trajectory import counted

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import Span, Tracer

SCOPE = "evalrun"
Attributes = dict[str, Any]


def run_spans(run: RunLog, service_name: str) -> Sequence[ReadableSpan]:
    """Every span of `run` (see the module docstring), ended, in the order they were made."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    collected = InMemorySpanExporter()
    resource = Resource.create(
        {"service.name": service_name, "openinference.project.name": service_name}
    )
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(collected))
    tracer = provider.get_tracer(SCOPE)
    _trace_run(tracer, run, run.planned(run.records()))
    provider.shutdown()
    return collected.get_finished_spans()


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def _trace_run(tracer: Tracer, run: RunLog, records: list[SampleRecord]) -> None:
    from opentelemetry import trace

    summary = run.summary(records)
    start = min((r.started_at for r in records), default=run.last_written)
    end = max((r.finished_at for r in records), default=start)
    attributes = _clean(
        {
            "openinference.span.kind": "CHAIN",
            "evalrun.run_id": run.plan.run_id,
            "evalrun.agent": run.agent_option,
            "evalrun.model": run.model,
            "evalrun.sandbox": run.plan.sandbox,
            "evalrun.trials": run.plan.trials,
            "evalrun.samples": summary.samples,
            "evalrun.passes": summary.passes,
            "evalrun.errors": summary.errors,
            "evalrun.pass@1": summary.overall.pass_at.get(1),
            "evalrun.cost_usd": summary.cost.total_usd,
        }
    )
    root = tracer.start_span(
        f"evalrun.run {run.plan.run_id}", start_time=_ns(start), attributes=attributes
    )
    system = _provider_name(run.config)
    tasks = {task.id: task for task in run.plan.tasks}
    for record in records:
        task = tasks[record.task_id]
        context = trace.set_span_in_context(root)
        sample = tracer.start_span(
            f"evalrun.sample {record.key.label}",
            context=context,
            start_time=_ns(record.started_at),
            attributes=_sample_attributes(record) | {"evalrun.difficulty": task.difficulty},
        )
        if record.outcome is Outcome.error:
            sample.set_status(trace.Status(trace.StatusCode.ERROR, record.reason or "error"))
        _trace_phases(tracer, sample, record, system)
        sample.end(end_time=_ns(record.finished_at))
    root.end(end_time=_ns(end))


def _sample_attributes(record: SampleRecord) -> Attributes:
    usage = record.agent.usage
    known = counted(usage)
    return _clean(
        {
            "openinference.span.kind": "CHAIN",
            "evalrun.task_id": record.task_id,
            "evalrun.trial": record.trial,
            "evalrun.outcome": record.outcome.value,
            "evalrun.reason": record.reason,
            "evalrun.timed_out_phase": record.timed_out_phase,
            "evalrun.cost_usd": usage.cost_usd,
            "gen_ai.usage.input_tokens": usage.input_tokens if known else None,
            "gen_ai.usage.output_tokens": usage.output_tokens if known else None,
        }
        | {f"evalrun.score.{name}": score for name, score in record.scores.items()}
    )


def _trace_phases(tracer: Tracer, sample: Span, record: SampleRecord, system: str | None) -> None:
    from opentelemetry import trace

    context = trace.set_span_in_context(sample)
    at = record.started_at
    for phase in PHASES:
        seconds = getattr(record.phases, phase)
        if seconds is None:
            continue
        attributes = _clean(
            {
                "openinference.span.kind": "AGENT" if phase == "agent" else "CHAIN",
                "evalrun.phase": phase,
                "evalrun.timed_out": record.timed_out_phase == phase or None,
            }
        )
        span = tracer.start_span(
            f"evalrun.{phase}", context=context, start_time=_ns(at), attributes=attributes
        )
        if phase == "agent":
            for call in record.agent.model_calls:
                _trace_call(tracer, span, call, at, system)
        span.end(end_time=_ns(at + seconds))
        at += seconds


def _trace_call(
    tracer: Tracer, agent: Span, call: ModelCall, phase_start: float, system: str | None
) -> None:
    from opentelemetry import trace

    start = call.started_at if call.started_at is not None else phase_start
    model = call.model or "unknown"
    attributes = _clean(
        {
            "openinference.span.kind": "LLM",
            "gen_ai.operation.name": "chat",
            "gen_ai.system": system,
            "gen_ai.request.model": call.model,
            "gen_ai.usage.input_tokens": call.input_tokens,
            "gen_ai.usage.output_tokens": call.output_tokens,
            "llm.model_name": call.model,
            "llm.provider": system,
            "llm.token_count.prompt": call.input_tokens,
            "llm.token_count.completion": call.output_tokens,
            "llm.token_count.total": call.input_tokens + call.output_tokens,
            "llm.token_count.prompt_details.cache_read": call.cache_read_tokens,
            "llm.token_count.prompt_details.cache_write": call.cache_write_tokens,
            "llm.cost.total": call.cost_usd,
            "evalrun.cost_usd": call.cost_usd,
        }
    )
    span = tracer.start_span(
        f"chat {model}",
        context=trace.set_span_in_context(agent),
        start_time=_ns(start),
        attributes=attributes,
    )
    span.end(end_time=_ns(start + (call.duration_s or 0.0)))


def _provider_name(config: dict[str, Any]) -> str | None:
    """The provider the agent's model requests went to (`provider.name`), for `gen_ai.system`."""
    agent = config.get("agent")
    provider = agent.get("provider") if isinstance(agent, dict) else None
    if not isinstance(provider, dict):
        provider = config.get("provider")
    name = provider.get("name") if isinstance(provider, dict) else None
    return str(name) if name else None


def _clean(attributes: Attributes) -> Attributes:
    """Attributes without the unknown ones (OpenTelemetry has no null)."""
    return {key: value for key, value in attributes.items() if value is not None}
