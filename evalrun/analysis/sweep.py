"""The sweep summary: after `evalrun -m ...`, line the jobs up side by side at the multirun root.

The sweep's Hydra callback (`hydra.callbacks.sweep_summary` in conf/config.yaml) runs in the
launching process once every job has returned - with the basic launcher and with
`hydra/launcher=joblib` (jobs in parallel worker processes) alike. `evalrun.rundir.readers`
reads each job's run directory (`<sweep dir>/<job number>/`), this module lines them up, and
`<sweep dir>/sweep.json` is written (`evalrun.models.sweep.SweepFile`); the callback
prints it as tables (`evalrun.report.sweep_terminal`) and writes the sweep page:

- the swept values: the `key=value` overrides (from each job's overrides.yaml) that differ
  between jobs;
- each job's metrics from its summary.json (`sweep_metrics`, named as in
  `evalrun.analysis.metric_table`), and its gate: the job's own threshold profile (from its
  resolved config.yaml) re-checked here, so a broken gate fails the multirun even when jobs ran
  in other processes;
- judge agreement, when samples carry judge scores (`SampleRecord.scores[<judge>]`, the keys that
  also have a `judge_reasons` entry): a score >= 0.5 counts as judge-pass; agreement with the
  verifier is the fraction of a job's scored samples where judge-pass equals the verifier's pass;
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

from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from evalrun.analysis.metric_table import metric_interval, metric_value
from evalrun.models.records import Outcome, SampleRecord
from evalrun.models.summary import PASS_AT, PASS_HAT, Estimate, Summary, pass_metric
from evalrun.models.sweep import (
    Figure,
    JobGate,
    JudgeAgreement,
    JudgePair,
    SweepFile,
    SweepJob,
    VerifierAgreement,
)

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
    gate: JobGate | None = None


def swept_keys(jobs: list[Job]) -> list[str]:
    """Override keys whose value is not the same in every job (in first-seen order)."""
    keys = list(dict.fromkeys(k for job in jobs for k in job.overrides))
    return [k for k in keys if len({job.overrides.get(k) for job in jobs}) > 1]


def sweep_metrics(k: int) -> list[str]:
    """The metrics a sweep lines up per job (`evalrun.analysis.metric_table` names; k = the job's
    trials): the pass rates, then what a change usually costs - errors, money, agent time."""
    passes = [pass_metric(PASS_AT, 1), pass_metric(PASS_AT, k), pass_metric(PASS_HAT, k)]
    return [*dict.fromkeys(passes), "error_rate", "cost_total", "p95_agent_s"]


def job_metrics(summary: Summary) -> dict[str, Figure]:
    """The job's sample count and its `sweep_metrics`."""
    names = sweep_metrics(max(summary.ks, default=1))
    return {"samples": summary.samples, **{name: metric_value(summary, name) for name in names}}


def job_intervals(summary: Summary) -> dict[str, Estimate]:
    """The 95% intervals of the job's metrics that have one."""
    return {
        name: est
        for name in job_metrics(summary)
        if name != "samples" and (est := metric_interval(summary, name)) is not None
    }


def _judge_names(records: list[SampleRecord]) -> list[str]:
    names = {n for r in records for n in getattr(r, "judge_reasons", {}) if n in r.scores}
    return sorted(names)


def judge_agreement(jobs: list[Job], labels: dict[int, str]) -> JudgeAgreement:
    """Agreement of each judge with the verifier, and between judges (see the module docstring)."""
    verdicts: dict[str, dict[tuple[str, str, int], bool]] = {}
    with_verifier: dict[str, VerifierAgreement] = {}
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
                with_verifier[label] = VerifierAgreement(
                    samples=len(cells), agreement=agree / len(cells)
                )
    between = []
    for (a, va), (b, vb) in combinations(verdicts.items(), 2):
        if a.rsplit(":", 1)[-1] != b.rsplit(":", 1)[-1]:
            continue  # different criteria are not two judges of one question
        shared = set(va) & set(vb)
        if shared:
            same = sum(va[c] == vb[c] for c in shared)
            between.append(JudgePair(a=a, b=b, cells=len(shared), agreement=same / len(shared)))
    return JudgeAgreement(
        judge_pass_at=JUDGE_PASS, with_verifier=with_verifier, between_judges=between
    )


def summarize_sweep(sweep_dir: Path, jobs: list[Job]) -> SweepFile:
    """The sweep summary (written as sweep.json); the jobs are read by
    `evalrun.rundir.readers.load_jobs`."""
    keys = swept_keys(jobs)
    labels = {j.num: ",".join(f"{k}={j.overrides.get(k, '')}" for k in keys) for j in jobs}
    return SweepFile(
        sweep_dir=str(sweep_dir),
        swept=keys,
        jobs=[
            SweepJob(
                job=job.num,
                run_dir=str(job.run_dir),
                swept={k: job.overrides.get(k) for k in keys},
                overrides=job.overrides,
                finished=job.summary is not None,
                state=job.summary.state.describe() if job.summary and job.summary.state else None,
                metrics=job_metrics(job.summary) if job.summary else None,
                intervals=job_intervals(job.summary) if job.summary else None,
                gate=job.gate,
            )
            for job in jobs
        ],
        judges=judge_agreement(jobs, labels),
    )
