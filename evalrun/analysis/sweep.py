"""The sweep summary: after `evalrun -m ...`, line the jobs up side by side at the multirun root.

`evalrun.cli.callbacks.SweepSummary` is a Hydra callback (`hydra.callbacks.sweep_summary` in
conf/config.yaml); Hydra calls `on_multirun_end` in the launching process once every job has
returned - with the basic launcher and with `hydra/launcher=joblib` (jobs in parallel worker
processes) alike. It reads each job's run directory (`<sweep dir>/<job number>/`), writes
`<sweep dir>/sweep.json` and prints a table:

- the swept values: the `key=value` overrides (from each job's overrides.yaml) that differ
  between jobs;
- each job's metrics from its summary.json (`sweep_metrics`, named as in
  `evalrun.analysis.metric_table`), and its gate: the job's own threshold profile (from its
  resolved config.yaml) re-checked here, so a broken gate fails the multirun even when jobs ran
  in other processes;
- judge agreement, when samples carry judge scores (`SampleRecord.scores[<judge>]`, the keys that
  also have a `judge_reasons` entry): a score >= 0.5 counts as judge-pass; agreement with the
  oracle is the fraction of a job's scored samples where judge-pass equals the oracle's pass;
  agreement between two judges (the same criterion scored in two jobs, e.g. under
  `-m judge=a,b`) is the fraction of cells (task, fingerprint, trial) both scored where they agree.
  With a deterministic agent (`agent=oracle`) the two jobs judged the same work; with a model
  agent each job judged its own attempt at the cell, so cross-job agreement mixes judge
  disagreement with agent variance - it is labelled per cell, not per identical sample.

A job without summary.json (it failed or was interrupted) is listed with its overrides and no
metrics. The callback itself is light (Hydra instantiates it on every run, a dry run too) and
imports this module only when a multirun ends.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import OmegaConf

from evalrun.analysis.gate import build_profile
from evalrun.analysis.metric_table import (
    PASS_AT,
    PASS_HAT,
    metric_interval,
    metric_value,
    pass_metric,
)
from evalrun.analysis.metrics import Summary
from evalrun.console import styled
from evalrun.errors import UsageError
from evalrun.models.records import Outcome, SampleRecord
from evalrun.rundir.log import RunLog, sweep_jobs

if TYPE_CHECKING:
    from rich.console import Console

SWEEP_FILE = "sweep.json"
JUDGE_PASS = 0.5


@dataclass
class Job:
    """One job of the sweep, as read from its run directory."""

    num: int
    run_dir: Path
    overrides: dict[str, str]
    summary: Summary | None
    records: list[SampleRecord] = field(default_factory=list)
    gate: dict[str, Any] = field(default_factory=dict)


def _override_pairs(overrides: list[str]) -> dict[str, str]:
    pairs = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if sep:
            pairs[key.lstrip("+~")] = value
    return pairs


def _gate(run: RunLog, summary: Summary) -> dict[str, Any]:
    """Re-check the job's own profile (as resolved in its config.yaml) on its summary."""
    profile_cfg = run.config.get("profile")
    if not isinstance(profile_cfg, dict):
        return {}
    try:
        profile = build_profile(OmegaConf.create(profile_cfg), run.config.get("baseline"))
    except UsageError as exc:
        return {"profile": profile_cfg.get("name"), "error": str(exc), "exit_code": 2}
    breaches = [str(b) for b in profile.check(summary)]
    return {"profile": profile.name, "breaches": breaches, "exit_code": 1 if breaches else 0}


def load_jobs(sweep_dir: Path) -> list[Job]:
    """Every numbered job folder under `sweep_dir` that holds a run (config.yaml and plan.json)."""
    jobs = []
    for folder in sweep_jobs(sweep_dir):
        try:
            run = RunLog.open(folder)
        except UsageError as exc:
            raise UsageError(f"sweep: {exc}") from exc
        job = Job(int(folder.name), folder, _override_pairs(run.overrides), None)
        if run.ended:
            job.records = list(run.records())
            job.summary = run.summary(run.planned(job.records))
            job.gate = _gate(run, job.summary)
        jobs.append(job)
    return jobs


def swept_keys(jobs: list[Job]) -> list[str]:
    """Override keys whose value is not the same in every job (in first-seen order)."""
    keys = list(dict.fromkeys(k for job in jobs for k in job.overrides))
    return [k for k in keys if len({job.overrides.get(k) for job in jobs}) > 1]


def sweep_metrics(k: int) -> list[str]:
    """The metrics a sweep lines up per job (`evalrun.analysis.metric_table` names; k = the job's
    trials): the pass rates, then what a change usually costs - errors, money, agent time."""
    passes = [pass_metric(PASS_AT, 1), pass_metric(PASS_AT, k), pass_metric(PASS_HAT, k)]
    return [*dict.fromkeys(passes), "error_rate", "cost_total", "p95_agent_s"]


def job_metrics(summary: Summary) -> dict[str, float | int | None]:
    """The job's sample count and its `sweep_metrics`."""
    names = sweep_metrics(max(summary.ks, default=1))
    return {"samples": summary.samples, **{name: metric_value(summary, name) for name in names}}


def job_intervals(summary: Summary) -> dict[str, dict[str, Any]]:
    """The 95% intervals of the job's metrics that have one (`evalrun.analysis.stats.Estimate`)."""
    return {
        name: asdict(est)
        for name in job_metrics(summary)
        if name != "samples" and (est := metric_interval(summary, name)) is not None
    }


def _judge_names(records: list[SampleRecord]) -> list[str]:
    names = {n for r in records for n in getattr(r, "judge_reasons", {}) if n in r.scores}
    return sorted(names)


def judge_agreement(jobs: list[Job], labels: dict[int, str]) -> dict[str, Any]:
    """Agreement of each judge with the oracle, and between judges (see the module docstring)."""
    verdicts: dict[str, dict[tuple[str, str, int], bool]] = {}
    with_oracle: dict[str, dict[str, float | int]] = {}
    for job in jobs:
        for name in _judge_names(job.records):
            label = f"{labels[job.num]}:{name}" if labels[job.num] else name
            cells, agree = {}, 0
            for rec in job.records:
                score = rec.scores.get(name)
                if score is None or rec.outcome is Outcome.error:
                    continue
                judged = score >= JUDGE_PASS
                cells[(rec.task_id, rec.fingerprint, rec.trial)] = judged
                agree += judged == (rec.outcome is Outcome.passed)
            verdicts[label] = cells
            if cells:
                with_oracle[label] = {"samples": len(cells), "agreement": agree / len(cells)}
    between = []
    for (a, va), (b, vb) in combinations(verdicts.items(), 2):
        if a.rsplit(":", 1)[-1] != b.rsplit(":", 1)[-1]:
            continue  # different criteria are not two judges of one question
        shared = set(va) & set(vb)
        if shared:
            same = sum(va[c] == vb[c] for c in shared)
            between.append({"a": a, "b": b, "cells": len(shared), "agreement": same / len(shared)})
    return {"judge_pass_at": JUDGE_PASS, "with_oracle": with_oracle, "between_judges": between}


def summarize_sweep(sweep_dir: Path) -> dict[str, Any]:
    """The sweep summary as a JSON-ready dict (written as sweep.json)."""
    jobs = load_jobs(Path(sweep_dir))
    keys = swept_keys(jobs)
    labels = {j.num: ",".join(f"{k}={j.overrides.get(k, '')}" for k in keys) for j in jobs}
    return {
        "sweep_dir": str(sweep_dir),
        "swept": keys,
        "jobs": [
            {
                "job": job.num,
                "run_dir": str(job.run_dir),
                "swept": {k: job.overrides.get(k) for k in keys},
                "overrides": job.overrides,
                "finished": job.summary is not None,
                "state": _state(job.summary),
                "metrics": job_metrics(job.summary) if job.summary else None,
                "intervals": job_intervals(job.summary) if job.summary else None,
                "gate": job.gate or None,
            }
            for job in jobs
        ],
        "judges": judge_agreement(jobs, labels),
    }


def _state(summary: Summary | None) -> str | None:
    return summary.state.describe() if summary is not None and summary.state else None


def _fmt(value: Any, interval: dict[str, Any] | None = None) -> str:
    if value is None:
        return "-"
    if interval and interval.get("low") is not None and interval.get("high") is not None:
        return f"{value:.3f} ± {(interval['high'] - interval['low']) / 2:.2f}"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def render(sweep: dict[str, Any], console: Console) -> None:
    from rich.table import Table

    table = Table(title=f"Sweep {sweep['sweep_dir']}", header_style="bold")
    metric_names = list(dict.fromkeys(m for job in sweep["jobs"] for m in (job["metrics"] or {})))
    for column in ["job", *sweep["swept"], *metric_names, "gate"]:
        table.add_column(column)
    for job in sweep["jobs"]:
        metrics = job["metrics"] or {}
        gate = job["gate"] or {}
        state = job.get("state") or ""
        if not job["finished"]:
            verdict = styled("[yellow]unfinished[/]")
        elif state.startswith("partial"):
            verdict = styled("[yellow]{}[/]", state.split(" (")[0])
        elif gate.get("exit_code"):
            verdict = styled("[red]broken ({})[/]", len(gate.get("breaches", [])))
        else:
            verdict = styled("ok ({})", gate.get("profile", "none"))
        table.add_row(
            str(job["job"]),
            *[_fmt(job["swept"].get(k)) for k in sweep["swept"]],
            *[_fmt(metrics.get(m), (job.get("intervals") or {}).get(m)) for m in metric_names],
            verdict,
        )
    console.print(table)
    judges = sweep["judges"]
    if not judges["with_oracle"]:
        console.print("judges: no judge scores in these jobs", highlight=False)
        return
    table = Table(title=f"Judge agreement (judge-pass: score >= {JUDGE_PASS})")
    for column in ("judge", "vs", "samples", "agreement"):
        table.add_column(column)
    for label, entry in judges["with_oracle"].items():
        table.add_row(label, "oracle", str(entry["samples"]), _fmt(entry["agreement"]))
    for pair in judges["between_judges"]:
        table.add_row(pair["a"], pair["b"], str(pair["cells"]), _fmt(pair["agreement"]))
    console.print(table)


def write_sweep_summary(sweep_dir: Path, console: Console) -> dict[str, Any]:
    """Summarise, write sweep.json and the sweep page, print the tables (once, after the last
    job); the sweep as JSON (its jobs' gates in `["jobs"][n]["gate"]["exit_code"]`)."""
    from evalrun.report.sweep_html import render_sweep_html

    sweep = summarize_sweep(sweep_dir)
    (Path(sweep_dir) / SWEEP_FILE).write_text(json.dumps(sweep, indent=2, default=str) + "\n")
    render(sweep, console)
    console.print(f"sweep summary: {Path(sweep_dir) / SWEEP_FILE}", highlight=False)
    if sweep["jobs"]:
        page = render_sweep_html(Path(sweep_dir))
        console.print(f"sweep report: {page}", highlight=False, soft_wrap=True)
    return sweep
