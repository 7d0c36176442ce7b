"""The run store survives a crash mid-write and never loses a finished record."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalrun.models.plan import PlanFile, PlannedTask, RunKind
from evalrun.models.records import CellKey, Outcome, SampleRecord, run_state
from evalrun.rundir import store as store_module
from evalrun.rundir.log import RunLog
from evalrun.rundir.redact import SecretValues
from evalrun.rundir.store import (
    LOCK_FILE,
    RunBusy,
    RunLock,
    RunStore,
    claim_new_run_dir,
    current_writer,
)


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


def _new_run(run_dir: Path) -> RunStore:
    """A run directory with a config and a plan of one task, two trials: what a run writes
    before its first sample."""
    store = RunStore(run_dir)
    store.create()
    store.write_config({"trials": 2})
    store.write_plan(
        PlanFile(
            schema_version=1,
            kind=RunKind.tasks,
            run_id="r",
            tasks_dir="tasks",
            trials=2,
            tasks=[PlannedTask(id="t", fingerprint="f")],
        )
    )
    return store


def _trials(run_dir: Path) -> list[int]:
    return [r.trial for r in RunLog.open(run_dir).records()]


def test_records_round_trip(tmp_path):
    store = _new_run(tmp_path)
    store.append(_rec(0))
    store.append(_rec(1))
    store.close()
    assert _trials(tmp_path) == [0, 1]


def test_torn_last_line_is_ignored_and_repaired_before_appending(tmp_path):
    store = _new_run(tmp_path)
    store.append(_rec(0))
    store.close()
    with store.samples_path.open("a") as handle:
        handle.write('{"run_id": "r", "task_id": "t", "fing')  # the crash
    assert _trials(tmp_path) == [0]
    assert RunLog.open(tmp_path).state().describe() == "partial 1/2 (missing cells: t#1)"
    again = RunStore(tmp_path)
    again.append(_rec(1))
    again.close()
    assert _trials(tmp_path) == [0, 1]


def test_a_record_that_still_cannot_be_serialised_is_written_as_its_cells_minimal_record(
    tmp_path, monkeypatch
):
    """The last resort, for anything `evalrun.models.writable` does not catch: the cell keeps a record
    with its outcome and a reason saying what could not be recorded, and the next record is
    written as usual."""
    monkeypatch.setattr(store_module, "writable", lambda record: record)  # a gap in it
    store = _new_run(tmp_path)
    broken = _rec(0).model_copy(
        update={"reason": "FAIL: bad \udcff name", "verify_output": "out \udcfe"}
    )
    written = store.append(broken)
    store.append(_rec(1))
    store.close()
    first, second = RunLog.open(tmp_path).records()
    assert first == written and (first.trial, first.outcome) == (0, Outcome.passed)
    assert first.reason is not None and first.reason.startswith("FAIL: bad \\xff name [the full")
    assert "could not be written: PydanticSerializationError" in first.reason
    assert first.verify_output == ""
    assert second.trial == 1 and RunLog.open(tmp_path).state().complete


class FullDisk:
    """A samples file whose disk fills up halfway through a write."""

    def __init__(self, real):
        self.real = real
        self.name = real.name

    def fileno(self) -> int:
        return self.real.fileno()

    def write(self, data) -> int:
        self.real.write(bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_write_that_fails_midway_leaves_no_torn_line_for_the_next_record(tmp_path):
    store = _new_run(tmp_path)
    store.append(_rec(0))
    real, store._handle = store._handle, FullDisk(store._handle)
    with pytest.raises(OSError, match="No space left"):
        store.append(_rec(1))
    store._handle = real  # space again: the next record must not be glued to half a line
    store.append(_rec(1))
    store.close()
    assert _trials(tmp_path) == [0, 1]


def test_a_log_is_written_whatever_bytes_and_however_much_the_agent_printed(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "LOG_CHARS", 1000)
    store = _new_run(tmp_path)
    key = CellKey(task_id="t", fingerprint="f", trial=0)
    store.write_log(key, "agent.log", "name \udcff\udcfe\n" + "x" * 5000 + "\nthe end\n")
    text = (tmp_path / "samples" / "t" / "0" / "agent.log").read_text(encoding="utf-8")
    assert text.startswith("[... ") and "chars omitted" in text and text.endswith("the end\n")
    assert len(text) < 1100
    store.write_log(key, "verify.log", "name \udcff\udcfe\n")
    assert (tmp_path / "samples/t/0/verify.log").read_text() == "name \\xff\\xfe\n"


# --- one directory, one writer -----------------------------------------------------------------
HOLD_LOCK = """
import sys, time
from evalrun.rundir.store import RunLock
lock = RunLock(sys.argv[1], "run")
lock.acquire()
print("locked", flush=True)
time.sleep(600)
"""


def _holder(run_dir: Path) -> subprocess.Popen:
    """Another process holding `run_dir`'s writer lock (until killed)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(run_dir)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_a_taken_name_gets_a_suffix_and_a_directory_is_never_reused(tmp_path):
    wanted = tmp_path / "runs" / "20250101-120000-eval"
    first, second, third = (claim_new_run_dir(wanted) for _ in range(3))
    assert [first.name, second.name, third.name] == [
        "20250101-120000-eval",
        "20250101-120000-eval-2",
        "20250101-120000-eval-3",
    ]
    (tmp_path / "runs" / "20250101-120000-eval-4").mkdir()  # an empty leftover: still taken
    assert claim_new_run_dir(wanted).name == "20250101-120000-eval-5"


def test_a_second_writer_is_refused_naming_the_pid_and_a_dead_ones_lock_is_taken_over(tmp_path):
    run_dir = tmp_path / "run"
    holder = _holder(run_dir)
    try:
        with pytest.raises(RunBusy) as refused:
            RunLock(run_dir).acquire()
        message = str(refused.value)
        assert f"run {run_dir} is being written by pid {holder.pid} (started " in message
        assert refused.value.exit_code == 2
        assert current_writer(run_dir) is not None and current_writer(run_dir).pid == holder.pid
    finally:
        holder.kill()  # SIGKILL: no chance to release; the kernel drops its lock
        holder.wait()
    assert str(holder.pid) in (run_dir / LOCK_FILE).read_text()  # the dead holder's leftover
    assert current_writer(run_dir) is None  # readers see nobody writing
    with RunLock(run_dir, "report"):
        assert current_writer(run_dir).pid == os.getpid()
    assert (run_dir / LOCK_FILE).read_text() == ""  # released: emptied, kept


def test_run_state_is_complete_or_partial_with_the_missing_cells_in_plan_order():
    cells = [CellKey(task_id=t, fingerprint="f", trial=i) for t in ("a", "b") for i in range(3)]
    assert run_state(cells, cells).describe() == "complete"
    stale = CellKey(task_id="b", fingerprint="old", trial=0)  # the task changed since
    state = run_state(cells, [cells[0], cells[2], stale, cells[0]])
    assert not state.complete and (state.cells, state.recorded) == (6, 2)
    assert state.missing == ["a#1", "b#0", "b#1", "b#2"]
    assert state.describe(shown=2) == "partial 2/6 (missing cells: a#1, b#0 and 2 more)"
    assert state.model_dump()["label"] == "partial 2/6 (missing cells: a#1, b#0, b#1, b#2)"


def test_everything_the_store_writes_is_scrubbed_of_the_runs_secret_values(tmp_path):
    secret = "sk-live-0123456789abcdef"
    store = RunStore(tmp_path, SecretValues({secret: "MY_API_KEY"}))
    record = _rec(0).model_copy(update={"reason": f"agent printed {secret}"})
    written = store.append(record)
    store.write_log(written.key, "agent.log", f"key={secret}\n")
    store.write_json("summary.json", {"note": [secret]})
    store.write_config({"agent": {"env": {"PLAIN": "value"}, "cmd": f"tool --key {secret}"}})
    store.write_overrides([f"+agent.env.OTHER={secret}", "agent.cmd=x"])
    store.close()
    assert written.reason == "agent printed ***" and written.task_id == "t"
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(), path
    assert "PLAIN: '***'" in (tmp_path / "config.yaml").read_text()
    assert "+agent.env.OTHER=***" in (tmp_path / "overrides.yaml").read_text()
