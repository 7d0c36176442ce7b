"""The terminal report's "Why" block: failures and harness errors grouped by task, one line each,
the agent's part first, capped with a pointer to report.html."""

from __future__ import annotations

import io

from rich.console import Console

from evalrun.models.records import AgentResult, Outcome, SampleRecord
from evalrun.report.terminal import print_reasons


def record(task_id: str, trial: int, outcome: Outcome, reason: str, **extra) -> SampleRecord:
    return SampleRecord(
        run_id="r",
        task_id=task_id,
        fingerprint="f",
        trial=trial,
        outcome=outcome,
        reason=reason,
        started_at=0.0,
        finished_at=1.0,
        **extra,
    )


def printed(records: list[SampleRecord]) -> list[str]:
    out = io.StringIO()
    print_reasons(records, Console(file=out, width=300))
    return [" ".join(line.split()) for line in out.getvalue().splitlines()]


def test_reasons_are_grouped_by_task_agent_first_and_passes_left_out():
    timed_out = AgentResult(error="agent timed out after 5s")
    crashed = AgentResult(error="RuntimeError: boom\nTraceback ...")
    lines = printed(
        [
            record("001-a", 0, Outcome.failed, "FAIL: x != y\nmore detail"),
            record("001-a", 1, Outcome.failed, "FAIL: x != y\nmore detail"),
            record("001-a", 2, Outcome.passed, "ok"),
            record(
                "002-b",
                0,
                Outcome.failed,
                "FAIL: no answer (agent: agent timed out after 5s)",
                agent=timed_out,
                timed_out_phase="agent",
            ),
            record(
                "002-b",
                1,
                Outcome.failed,
                "FAIL: no answer (agent: RuntimeError: boom\nTraceback ...)",
                agent=crashed,
            ),
            record("003-c", 0, Outcome.error, "sandbox failed: engine down"),
        ]
    )
    assert lines == [
        "Why (4 failed, 1 harness errors):",
        "fail 001-a #0,#1 FAIL: x != y",
        "fail 002-b #0 agent timed out after 5s → FAIL: no answer",
        "fail 002-b #1 agent: RuntimeError: boom → FAIL: no answer",
        "error 003-c #0 sandbox failed: engine down",
    ]


def test_after_ten_lines_the_rest_is_counted_and_pointed_to():
    records = [record(f"{n:03d}-t", 0, Outcome.failed, f"FAIL: case {n}") for n in range(13)]
    lines = printed(records)
    assert len(lines) == 1 + 10 + 1
    assert lines[-1] == "... and 3 more: see report.html"


def test_nothing_is_printed_when_everything_passed():
    assert printed([record("001-a", 0, Outcome.passed, None)]) == []
