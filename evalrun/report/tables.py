"""A run as tables a notebook loads: one row per sample, or one row per task (`evalrun export
--format csv|parquet`), and the whole run as one JSON document (`--format log`).

The rows are plain Python here (`sample_rows`, `task_rows`; the columns are documented in
docs/run-directory.md, "Tables"); pandas and pyarrow, the `export` extra, write them
(`write_table`) and are imported only then. Everything is read through `RunLog`: the samples
are the plan's cells (the latest record of a cell recorded twice, as in summary.json), the task
rows are summary.json's.

Every row carries the run's identity (run id, agent option, model, sandbox), so the tables of
several runs concatenate into one frame without a join.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from evalrun.models.records import SampleRecord
from evalrun.models.summary import PASS_AT, PASS_HAT, PHASES, pass_metric
from evalrun.rundir.log import RunLog
from evalrun.rundir.trajectory import counted

TableFormat = Literal["csv", "parquet"]
LOG_FORMAT = "evalrun-log/1"  # the `format` field of a `--format log` document
TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
COUNTS = frozenset(  # whole numbers
    {"trial", "verify_exit_code", "attempts", "requests", *TOKENS, "tool_calls", "files_changed"}
    | {"trials", "scored", "passes", "errors"}
)


def run_columns(run: RunLog) -> dict[str, Any]:
    """The columns every row of `run` starts with: which run, which agent, where it ran."""
    return {
        "run_id": run.plan.run_id,
        "agent": run.agent_option,
        "agent_kind": run.plan.agent,
        "model": run.model,
        "sandbox": run.plan.sandbox,
    }


def sample_rows(run: RunLog) -> list[dict[str, Any]]:
    """One row per sample of the plan's cells, in plan order (see the module docstring)."""
    tasks = {task.id: task for task in run.plan.tasks}
    records = run.planned(run.records())
    judges = sorted({name for record in records for name in record.scores})
    base = run_columns(run)
    return [
        base
        | {"task_id": record.task_id, "trial": record.trial}
        | {"difficulty": tasks[record.task_id].difficulty}
        | {"tags": ",".join(tasks[record.task_id].tags)}
        | _outcome(record)
        | {f"score.{name}": record.scores.get(name) for name in judges}
        | _timing(record)
        | _usage(record)
        | _activity(record)
        for record in records
    ]


def _outcome(record: SampleRecord) -> dict[str, Any]:
    return {
        "outcome": record.outcome.value,
        "reason": record.reason,
        "timed_out_phase": record.timed_out_phase,
        "verify_exit_code": record.verify_exit_code,
        "attempts": record.attempts,
    }


def _timing(record: SampleRecord) -> dict[str, Any]:
    phases = {f"{phase}_s": getattr(record.phases, phase) for phase in PHASES}
    return phases | {
        "total_s": record.finished_at - record.started_at,
        "started_at": datetime.fromtimestamp(record.started_at, UTC),
        "finished_at": datetime.fromtimestamp(record.finished_at, UTC),
    }


def _usage(record: SampleRecord) -> dict[str, Any]:
    """Requests and tokens where someone counted them (an oracle's are unknown, not 0)."""
    usage = record.agent.usage
    known = counted(usage)
    return {name: getattr(usage, name) if known else None for name in ("requests", *TOKENS)} | {
        "cost_usd": usage.cost_usd,
        "cost_source": usage.cost_source,
    }


def _activity(record: SampleRecord) -> dict[str, Any]:
    diff = record.workspace_diff
    return {
        "tool_calls": len(record.agent.trajectory),
        "files_changed": None if diff is None or diff.skipped else len(diff.files),
        "agent_error": record.agent.error,
        "fingerprint": record.fingerprint,
    }


def task_rows(run: RunLog) -> list[dict[str, Any]]:
    """One row per task of summary.json (recomputed when missing or stale): its counts, every
    pass@k and pass^k the run reports, flakiness, mean latency and cost."""
    summary = run.summary()
    base = run_columns(run)
    return [
        base
        | {"task_id": stats.task_id, "difficulty": stats.difficulty}
        | {"tags": ",".join(stats.tags), "trials": stats.trials, "scored": stats.n}
        | {"passes": stats.passes, "errors": stats.errors}
        | {pass_metric(PASS_AT, k): stats.pass_at.get(k) for k in summary.ks}
        | {pass_metric(PASS_HAT, k): stats.pass_hat.get(k) for k in summary.ks if k > 1}
        | {"flaky": stats.flaky, "mean_latency_s": stats.mean_latency_s}
        | {"cost_usd": stats.cost_usd}
        for stats in summary.tasks
    ]


def write_table(rows: list[dict[str, Any]], path: Path, fmt: TableFormat) -> None:
    """`rows` as a CSV or Parquet file at `path` (pandas; pyarrow for Parquet)."""
    import pandas as pd

    frame = pd.DataFrame.from_records(rows)
    frame = frame.astype(_dtypes(list(frame.columns)))
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False, engine="pyarrow")


def write_log(run: RunLog, path: Path) -> None:
    """The whole run as one JSON document - plan, resolved config, summary and every record
    in file order, like Inspect's one log per run - at `path`."""
    document = {
        "format": LOG_FORMAT,
        "plan": run.plan.model_dump(mode="json", exclude_none=True),
        "config": run.config,
        "summary": run.summary().model_dump(mode="json"),
        "samples": [record.model_dump(mode="json") for record in run.records()],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        json.dump(document, handle, ensure_ascii=False)
        handle.write("\n")


def _dtypes(columns: list[str]) -> dict[str, str]:
    """A type for every column that may be empty: whole numbers as pandas' nullable `Int64`
    (a gap does not turn them into floats), seconds, dollars, scores and pass rates as floats
    (a column unknown in every row is still a number column)."""
    floats = ("cost_usd", "mean_latency_s")
    rates = (PASS_AT, PASS_HAT, "score.")
    found = {name: "Int64" for name in columns if name in COUNTS}
    found |= {n: "float64" for n in columns if n in floats or n.endswith("_s")}
    return found | {name: "float64" for name in columns if name.startswith(rates)}
