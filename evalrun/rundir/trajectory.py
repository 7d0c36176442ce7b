"""A sample's `trajectory.json`: its record as an ATIF document (`evalrun.models.atif`).

One function, `trajectory_of(record, session)`, makes it, for a run as it goes (the runner,
through `RunStore.write_trajectory`) and for a run that ended long ago (`evalrun export
--format atif`): the same record gives the same file either way. What goes in:

- step 1, `user`: the prompt the agent was given (plan.json);
- one `agent` step per tool call of the record's trajectory, its result as the step's
  observation; as the step's `metrics`, the model call that asked for it, as counted one by one
  (`AgentResult.model_calls`: evalrun's gateway for the presets, pydantic-ai for `coder`; tokens,
  cached tokens, cost) when the call's API id is known on both sides, else the tokens the
  agent's log gave; on the first step of each model call only, so the steps add up;
- a last `agent` step: the agent's final message (its error, if it had one, in `extra`);
- `final_metrics`: the sample's usage - the gateway's meter for the CLI presets, pydantic-ai's
  count for `coder`, the agent's own usage file for `command` - and nothing where no one counted
  (an oracle's tokens are unknown, not 0).

An agent that wrote ATIF itself (`AgentResult.atif`, imported by the agent) keeps its own
steps; evalrun adds the session id, its sample's identity in `extra.evalrun`, and - when the
gateway metered the sample - the metered totals in `final_metrics`, the agent's own figures kept
beside them in `final_metrics.extra.agent_reported`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

import evalrun
from evalrun.models.atif import (
    Agent,
    FinalMetrics,
    Metrics,
    Observation,
    ObservationResult,
    Step,
    ToolCall,
    Trajectory,
)
from evalrun.models.plan import PlanFile
from evalrun.models.records import ModelCall, SampleRecord, Usage
from evalrun.models.records import ToolCall as Call

METERED = "metered by evalrun's gateway"
BUILT_IN = frozenset({"coder", "oracle", "noop"})  # agents that are part of evalrun itself


@dataclass(frozen=True)
class Session:
    """What a trajectory needs beyond the record: the agent as configured and the prompts."""

    agent: Agent
    prompts: dict[str, str]  # task id -> the prompt its agent was given

    @classmethod
    def of(cls, plan: PlanFile, config: dict[str, Any]) -> Session:
        """From a run's plan.json and resolved config (config.yaml)."""
        agent_cfg = config.get("agent")
        agent_cfg = agent_cfg if isinstance(agent_cfg, dict) else {}
        provider = agent_cfg.get("provider")
        model = agent_cfg.get("model") or (
            provider.get("model") if isinstance(provider, dict) else None
        )
        name = plan.choices.get("agent", plan.agent)
        version = agent_cfg.get("version")
        if version is None:
            version = evalrun.__version__ if plan.agent in BUILT_IN else "unknown"
        return cls(
            agent=Agent(
                name=name,
                version=str(version),
                model_name=str(model) if model else None,
                extra={"kind": plan.agent} if plan.agent != name else None,
            ),
            prompts={task.id: task.prompt or "" for task in plan.tasks},
        )


def trajectory_of(record: SampleRecord, session: Session) -> Trajectory:
    """The sample's ATIF document (see the module docstring)."""
    imported = record.agent.atif
    if imported is not None:
        try:
            return _with_evalrun(Trajectory.model_validate(imported), record, session)
        except ValidationError as exc:  # cut down by the record's bounds: evalrun's own view
            note = f"the agent's own ATIF could not be kept: {str(exc).splitlines()[0]}"
            return _built(record, session).model_copy(update={"notes": note})
    return _built(record, session)


def _built(record: SampleRecord, session: Session) -> Trajectory:
    result = record.agent
    steps = [Step(step_id=1, source="user", message=session.prompts.get(record.task_id, ""))]
    asked_by = {i: n for n, made in enumerate(result.model_calls) for i in made.tool_call_ids}
    credited: set[int] = set()  # model calls whose figures are on a step already
    for index, call in enumerate(result.trajectory):
        made_by = asked_by.get(call.call_id or "")
        if made_by is None:
            metrics, model = _own_metrics(call), None
        elif made_by in credited:
            metrics, model = None, None
        else:
            credited.add(made_by)
            made = result.model_calls[made_by]
            metrics, model = _metered(made), made.model
        model = model if model != session.agent.model_name else None
        call_id = call.call_id or f"call-{index + 1}"
        steps.append(_tool_step(len(steps) + 1, call_id, call, metrics, model))
    steps.append(
        Step(
            step_id=len(steps) + 1,
            source="agent",
            message=result.output,
            extra={"error": result.error} if result.error else None,
        )
    )
    return Trajectory(
        session_id=_session_id(record),
        agent=session.agent,
        steps=steps,
        final_metrics=_final_metrics(result.usage, len(steps)),
        extra={"evalrun": _identity(record)},
    )


def _own_metrics(call: Call) -> Metrics | None:
    """The tokens the agent's own log gave the model call that asked for `call`."""
    if call.input_tokens is None and call.output_tokens is None:
        return None
    return Metrics(prompt_tokens=call.input_tokens, completion_tokens=call.output_tokens)


def _metered(made: ModelCall) -> Metrics:
    """A model call as the gateway metered it."""
    return Metrics(
        prompt_tokens=made.input_tokens,
        completion_tokens=made.output_tokens,
        cached_tokens=made.cache_read_tokens,
        cost_usd=made.cost_usd,
        extra={"cache_write_tokens": made.cache_write_tokens, "counted_by": made.counted_by},
    )


def _tool_step(
    step_id: int, call_id: str, call: Call, metrics: Metrics | None, model: str | None
) -> Step:
    """One tool call of evalrun's trajectory as an agent step with its observation."""
    result_extra = {"error": call.error} if call.error else None
    return Step(
        step_id=step_id,
        source="agent",
        model_name=model,
        message="",
        tool_calls=[
            ToolCall(
                tool_call_id=call_id,
                function_name=call.name,
                arguments=call.args,
                extra={"duration_s": call.duration_s} if call.duration_s is not None else None,
            )
        ],
        observation=Observation(
            results=[
                ObservationResult(source_call_id=call_id, content=call.result, extra=result_extra)
            ]
        ),
        metrics=metrics,
    )


def _final_metrics(usage: Usage, steps: int | None) -> FinalMetrics:
    """The sample's totals, where someone counted them (see the module docstring)."""
    extra: dict[str, Any] = {}
    if usage.cost_source:
        extra["cost_source"] = usage.cost_source
    if not counted(usage):
        return FinalMetrics(total_steps=steps, extra=extra or None)
    extra |= {"requests": usage.requests, "cache_write_tokens": usage.cache_write_tokens}
    return FinalMetrics(
        total_prompt_tokens=usage.input_tokens,
        total_completion_tokens=usage.output_tokens,
        total_cached_tokens=usage.cache_read_tokens,
        total_cost_usd=usage.cost_usd,
        total_steps=steps,
        extra=extra,
    )


def counted(usage: Usage) -> bool:
    """Whether the usage's token counts were counted (0 included) rather than never known."""
    tokens = usage.input_tokens + usage.output_tokens + usage.cache_read_tokens
    return bool(usage.requests or tokens) or (usage.cost_source or "").startswith(METERED)


def _with_evalrun(own: Trajectory, record: SampleRecord, session: Session) -> Trajectory:
    """The agent's own document, with the session id, the sample's identity and the gateway's
    meter where it metered the sample."""
    update: dict[str, Any] = {
        "session_id": own.session_id or _session_id(record),
        "extra": {**(own.extra or {}), "evalrun": _identity(record)},
    }
    usage = record.agent.usage
    if (usage.cost_source or "").startswith(METERED):
        metered = _final_metrics(usage, len(own.steps))
        reported = own.final_metrics.model_dump(exclude_none=True) if own.final_metrics else {}
        if reported:
            metered.extra = {**(metered.extra or {}), "agent_reported": reported}
        update["final_metrics"] = metered
    elif own.final_metrics is None:
        update["final_metrics"] = _final_metrics(usage, len(own.steps))
    if not own.agent.model_name and session.agent.model_name:
        update["agent"] = own.agent.model_copy(update={"model_name": session.agent.model_name})
    return own.model_copy(update=update)


def _session_id(record: SampleRecord) -> str:
    return f"{record.run_id}/{record.task_id}/{record.trial}"


def _identity(record: SampleRecord) -> dict[str, Any]:
    """The sample this trajectory belongs to, and how it was graded."""
    return {
        "run_id": record.run_id,
        "task_id": record.task_id,
        "fingerprint": record.fingerprint,
        "trial": record.trial,
        "outcome": record.outcome.value,
        "reason": record.reason,
        "started_at": record.started_at,
        "finished_at": record.finished_at,
    }
