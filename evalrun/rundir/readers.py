"""Run folders read as the inputs of a comparison: the two sides of `evalrun diff`, the baseline a
threshold profile measures drops against, and the jobs of a sweep.

`evalrun.analysis` computes on what is read here and reads no folder itself; every missing or
unreadable file is a `UsageError` that names it (`RunLog.open`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from evalrun.analysis.diff import RunSide
from evalrun.analysis.gate import Baseline, ThresholdProfile, build_profile
from evalrun.analysis.sweep import SWEEP_FILE, Job, summarize_sweep
from evalrun.errors import ExitCode, UsageError
from evalrun.models.summary import Summary
from evalrun.models.sweep import JobGate, SweepFile
from evalrun.rundir.log import RunLog, read_summary, sweep_jobs
from evalrun.rundir.redact import override_name


def read_side(run_dir: str | Path) -> RunSide:
    """One side of a diff: a run directory that ended; `UsageError` naming what is missing."""
    try:
        run = RunLog.open(run_dir, ended=True)
    except UsageError as exc:
        raise UsageError(f"diff: {exc}") from exc
    fingerprints = {t.id: t.fingerprint for t in run.plan.tasks}
    source = run.plan.tasks_source
    return RunSide(
        run.run_dir,
        run.config,
        fingerprints,
        run.summary(),
        run.plan.choices,
        source.facts() if source else {},
    )


def profile_for(profile_cfg: Any, baseline: str | Path | None) -> ThresholdProfile:
    """The `profile` config group built, with the summary of the `baseline` run (if any)."""
    found = Baseline(Path(baseline), read_summary(baseline, "baseline")) if baseline else None
    return build_profile(profile_cfg, found)


def load_jobs(sweep_dir: Path) -> list[Job]:
    """Every numbered job folder under `sweep_dir` that holds a run (config.yaml and plan.json)."""
    jobs = []
    for folder in sweep_jobs(sweep_dir):
        try:
            run = RunLog.open(folder)
        except UsageError as exc:
            raise UsageError(f"sweep: {exc}") from exc
        pairs = {override_name(o): o.partition("=")[2] for o in run.overrides if "=" in o}
        job = Job(int(folder.name), folder, pairs, None)
        if run.ended:
            job.records = list(run.records())
            job.summary = run.summary(run.planned(job.records))
            job.gate = _gate(run, job.summary)
        jobs.append(job)
    return jobs


def write_sweep_summary(sweep_dir: Path) -> SweepFile:
    """Summarise the sweep and write it as sweep.json (once, after the last job)."""
    sweep = summarize_sweep(sweep_dir, load_jobs(sweep_dir))
    (Path(sweep_dir) / SWEEP_FILE).write_text(json.dumps(sweep.to_json(), indent=2) + "\n")
    return sweep


def _gate(run: RunLog, summary: Summary) -> JobGate | None:
    """Re-check the job's own profile (as resolved in its config.yaml) on its summary."""
    profile_cfg = run.config.get("profile")
    if not isinstance(profile_cfg, dict):
        return None
    try:
        profile = profile_for(OmegaConf.create(profile_cfg), run.config.get("baseline"))
    except UsageError as exc:
        name = profile_cfg.get("name")
        return JobGate(profile=name, error=str(exc), exit_code=ExitCode.USAGE)
    breaches = [str(b) for b in profile.check(summary)]
    code = ExitCode.FAILED if breaches else ExitCode.OK
    return JobGate(profile=profile.name, breaches=breaches, exit_code=code)
