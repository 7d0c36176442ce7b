"""How a record reads in Opik (pure mapping, no SDK): ids, scores, spans, suite scores."""

from __future__ import annotations

import uuid

import pytest

from evalrun.analysis.metrics import summarize
from evalrun.integrations.opik.traces import (
    experiment_scores,
    feedback_scores,
    span_kwargs,
    stable_uuid7,
    trace_id,
)
from evalrun.models.records import AgentResult, Outcome, Phases, SampleRecord, ToolCall, Usage


def record(outcome: Outcome = Outcome.passed, trial: int = 0, **extra) -> SampleRecord:
    return SampleRecord(
        run_id="r",
        task_id="001-a",
        fingerprint="f" * 64,
        trial=trial,
        outcome=outcome,
        started_at=1_767_225_600.0,
        finished_at=1_767_225_603.0,
        **extra,
    )


def test_ids_are_uuid7_and_deterministic_per_sample():
    first = trace_id("exp", record())
    assert uuid.UUID(first).version == 7
    assert first == trace_id("exp", record())
    assert first != trace_id("exp", record(trial=1)) != trace_id("other-exp", record())
    assert uuid.UUID(stable_uuid7(0, "x")).variant == uuid.RFC_4122


def test_scores_leave_out_what_does_not_exist():
    error = record(Outcome.error, reason="sandbox failed", phases=Phases(setup=0.5))
    assert [s["name"] for s in feedback_scores(error)] == ["latency_s"]  # no verdict, no cost

    judged = record(
        scores={"tidy": 0.7, "broken": None},
        judge_reasons={"tidy": "fine", "broken": "judge failed"},
        agent=AgentResult(usage=Usage(cost_usd=0.01)),
    )
    by_name = {s["name"]: s for s in feedback_scores(judged)}
    assert sorted(by_name) == ["cost_usd", "latency_s", "pass", "tidy"]  # a failed judge: absent
    assert by_name["tidy"]["reason"] == "fine" and by_name["pass"]["value"] == 1.0


def test_spans_follow_the_phases_and_nest_tool_calls_under_the_agent():
    rec = record(
        phases=Phases(setup=1.0, agent=2.0, verify=0.5),
        agent=AgentResult(trajectory=[ToolCall(name="write", args={"path": "a"}, duration_s=0.5)]),
    )
    spans = span_kwargs(rec, trace_id("exp", rec))
    assert [s["name"] for s in spans] == ["setup", "agent", "write", "verify"]
    agent = spans[1]
    assert spans[2]["parent_span_id"] == agent["id"]
    assert spans[2]["start_time"] == agent["start_time"]
    assert (spans[3]["start_time"] - spans[0]["start_time"]).total_seconds() == 3.0


def test_experiment_scores_are_the_suite_aggregates():
    records = [record(trial=0), record(Outcome.failed, trial=1), record(Outcome.error, trial=2)]
    meta = {"001-a": {"difficulty": "easy", "tags": []}}
    summary = summarize(records, meta, run_id="r", trials=3)
    scores = experiment_scores(summary)
    assert scores["pass@1"] == 0.5 and scores["flaky_rate"] == 1.0
    assert scores["error_rate"] == 1 / 3
    assert "pass@3" not in scores and "cost_per_success" not in scores  # undefined: absent
    # one task: its trials cannot tell how tasks differ, so no interval is sent
    assert "pass@1_ci95_low" not in scores
    two = summarize(
        [record(), record(Outcome.failed).model_copy(update={"task_id": "002-b"})],
        {"001-a": {}, "002-b": {}},
        run_id="r",
        trials=1,
    )
    scores = experiment_scores(two)  # 1 of 2 tasks: Wilson interval [0.0945, 0.9055]
    assert scores["pass@1_ci95_low"] == pytest.approx(0.0945, abs=1e-4)
    assert scores["pass@1_ci95_high"] == pytest.approx(0.9055, abs=1e-4)
