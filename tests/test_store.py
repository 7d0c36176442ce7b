"""The run store survives a crash mid-write and never loses a finished record."""

from __future__ import annotations

from evalrun.records import Outcome, SampleRecord
from evalrun.store import RunStore


def _rec(trial: int) -> SampleRecord:
    return SampleRecord(
        run_id="r",
        task_id="t",
        fingerprint="f",
        trial=trial,
        outcome=Outcome.passed,
        started_at=0.0,
        finished_at=1.0,
    )


def test_records_round_trip(tmp_path):
    store = RunStore(tmp_path)
    store.append(_rec(0))
    store.append(_rec(1))
    store.close()
    assert [r.trial for r in RunStore(tmp_path).records()] == [0, 1]


def test_torn_last_line_is_ignored_and_repaired_before_appending(tmp_path):
    store = RunStore(tmp_path)
    store.append(_rec(0))
    store.close()
    with store.samples_path.open("a") as handle:
        handle.write('{"run_id": "r", "task_id": "t", "fing')  # the crash
    assert [r.trial for r in RunStore(tmp_path).records()] == [0]
    again = RunStore(tmp_path)
    again.append(_rec(1))
    again.close()
    assert [r.trial for r in RunStore(tmp_path).records()] == [0, 1]
