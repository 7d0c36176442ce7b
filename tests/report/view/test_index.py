"""The index data of `evalrun view`: every run under a folder, as the page lists it."""

from __future__ import annotations

import json
import os

from evalrun.report.listing import Progress, RowCache, list_runs
from evalrun.report.view.index import TREND_METRICS, entry, index_html, trend_points
from evalrun.rundir.store import RunLock
from tests.report.view.conftest import HOSTILE_RUN, RUNS


def entries(root):
    return {e.key: e for e in (entry(root, r) for r in list_runs(root))}


def test_every_run_is_listed_with_agent_sandbox_suite_pass_rate_interval_cost_and_state(runs):
    listed = entries(runs)
    assert list(listed) == list(reversed(RUNS))  # newest first
    oracle, noop, bwrap = (listed[name] for name in RUNS[:3])
    assert (oracle.agent, oracle.sandbox, oracle.suite) == ("oracle", "local", "tasks")
    assert (noop.agent, bwrap.sandbox) == ("noop", "bwrap")
    assert oracle.model is None and oracle.provider is None  # oracle calls no model
    assert (oracle.tasks, oracle.trials) == (2, 1)
    assert oracle.pass_at_1 == 1.0 and noop.pass_at_1 == 0.0 and bwrap.pass_at_1 == 1.0
    # an interval at the bound is shown as [low, high], never a ± reading past 1
    assert oracle.pass_shown == "1.00 [0.34, 1.00]" and noop.pass_shown == "0.00 [0.00, 0.66]"
    assert oracle.pass_title == "95% CI [0.342, 1.000] (wilson, 2 tasks)"
    assert oracle.cost_usd is None  # the oracle reports no cost
    assert all(e.progress is Progress.complete and e.diffable for e in listed.values())
    assert oracle.started is not None and oracle.started < noop.started < bwrap.started
    assert oracle.href == "runs/20260101-100000-oracle/report.html"


def test_a_coder_run_names_its_model_and_provider(runs):
    folder = runs / RUNS[0]
    config = (folder / "config.yaml").read_text()
    config = config.replace(
        "agent:\n  _target_: evalrun.agents.oracle.OracleAgent\n",
        "agent:\n  _target_: evalrun.agents.coder.agent.CoderAgent\n"
        "  provider:\n    name: gemini\n    model: gemini-2.5-flash\n",
    )
    (folder / "config.yaml").write_text(config)
    plan = json.loads((folder / "plan.json").read_text())
    plan["choices"].update(agent="coder", provider="gemini")
    (folder / "plan.json").write_text(json.dumps(plan))
    coder = entries(runs)[RUNS[0]]
    assert (coder.agent, coder.model, coder.provider) == ("coder", "gemini-2.5-flash", "gemini")
    assert "gemini-2.5-flash" in coder.text  # the filter box finds a run by its model


def test_partial_and_running_runs_are_told_apart_from_complete_ones(runs):
    crashed, live = runs / RUNS[1], runs / RUNS[2]
    (crashed / "summary.json").unlink()  # stopped before writing its summary
    lines = (crashed / "samples.jsonl").read_text().splitlines(keepends=True)
    (crashed / "samples.jsonl").write_text(lines[0])
    with RunLock(live, "run"):  # a process (this one) is writing it
        listed = entries(runs)
    assert listed[RUNS[1]].progress is Progress.partial
    assert listed[RUNS[1]].status.startswith("partial 1/2 (missing cells: ")
    assert not listed[RUNS[1]].diffable and listed[RUNS[1]].pass_shown == "—"
    assert listed[RUNS[2]].progress is Progress.running
    assert f"being written by pid {os.getpid()} (run)" in listed[RUNS[2]].status
    assert entries(runs)[RUNS[2]].progress is Progress.complete  # the lock was released


def test_samples_recorded_after_the_summary_are_counted_again(runs):
    """summary.json said complete; a record was lost after it (samples.jsonl is newer): the
    state is read from the records, not from the stale summary."""
    run_dir = runs / RUNS[0]
    samples = run_dir / "samples.jsonl"
    samples.write_text(samples.read_text().splitlines(keepends=True)[0])
    summary_time = (run_dir / "summary.json").stat().st_mtime
    os.utime(samples, (summary_time + 5, summary_time + 5))
    assert entries(runs)[RUNS[0]].progress is Progress.partial


def test_the_row_cache_rereads_a_run_only_when_its_files_change(runs):
    cache = RowCache()
    first = {r.run_dir.name: r for r in list_runs(runs, cache)}
    again = {r.run_dir.name: r for r in list_runs(runs, cache)}
    assert all(again[k] is first[k] for k in first)  # unchanged: the same rows, not re-read
    (runs / RUNS[1] / "summary.json").unlink()
    changed = {r.run_dir.name: r for r in list_runs(runs, cache)}
    assert changed[RUNS[1]].summary is None and changed[RUNS[0]] is first[RUNS[0]]


def test_the_trend_follows_a_metric_over_the_runs_that_ended_in_time_order(runs):
    rows = list_runs(runs)
    keys = [r.run_dir.name for r in rows]
    pass_at_1 = next(m for m in TREND_METRICS if m.name == "pass@1")
    series = dict(trend_points(rows, keys, pass_at_1))
    assert set(series) == {"tasks", "hostile-suite"}  # one line per suite
    bundled = series["tasks"]
    assert [p.x for p in bundled] == [0, 1, 2]  # oldest first; the hostile run is x=3
    assert [p.value for p in bundled] == [1.0, 0.0, 1.0]
    assert bundled[0].label == f"{RUNS[0]} · oracle" and bundled[0].low is not None
    cost = next(m for m in TREND_METRICS if m.name == "cost total")
    assert trend_points(rows, keys, cost) == []  # no run reported a cost: nothing to draw


def test_markup_in_a_run_name_is_escaped_on_the_index(runs):
    page = index_html(runs, list_runs(runs))
    assert HOSTILE_RUN not in page
    assert "&lt;img src=x onerror=window.pwned=4&gt;" in page
    assert page.count("<script") == 1  # the page's own script, nothing else
