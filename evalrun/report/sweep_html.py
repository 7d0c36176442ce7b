"""The sweep report: one page comparing the jobs of a Hydra multirun (`evalrun -m ...`).

A sweep folder holds one run directory per job, named by job number (`0/`, `1/`, ...). The page
shows which config keys differ between the jobs, each job's headline numbers (sortable), pass@1
and pass@k per job as plots, and a task x job matrix - which tasks a change won or lost. Each job
links to its own report.html.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from evalrun.analysis.configdiff import flatten
from evalrun.errors import UsageError
from evalrun.models.summary import PASS_AT, PASS_HAT
from evalrun.report.page import Card, fmt_rate, fmt_usd, render, svg
from evalrun.report.rundata import HTML_FILE, RunFiles, load_run
from evalrun.report.svg import PALETTE, Series, bar_chart, line_chart
from evalrun.rundir.log import sweep_jobs

IGNORED_KEYS = ("run_dir",)


def render_sweep_html(sweep_dir: Path) -> Path:
    """Write `<sweep_dir>/report.html` comparing its jobs; `UsageError` when it holds none.
    Every job of a multirun rewrites it when it ends, so it always covers the jobs so far
    (a job still running shows as unfinished, from the samples it has recorded)."""
    sweep_dir = Path(sweep_dir)
    jobs = sweep_jobs(sweep_dir)
    if not jobs:
        raise UsageError(
            f"{sweep_dir} is not a multirun folder: expected numbered job run directories "
            "(0/, 1/, ...) in it"
        )
    path = sweep_dir / HTML_FILE
    tmp = path.with_name(f".{HTML_FILE}.{os.getpid()}.tmp")
    tmp.write_text(sweep_html(sweep_dir, [load_run(j) for j in jobs]), encoding="utf-8")
    os.replace(tmp, path)  # jobs of a parallel sweep each rewrite it; readers never see half
    return path


def varying_keys(runs: list[RunFiles]) -> list[str]:
    """Dotted config keys whose value is not the same in every job."""
    flats = [flatten(r.config) for r in runs]
    keys = sorted(set().union(*flats))
    return [
        k
        for k in keys
        if k not in IGNORED_KEYS and len({repr(f.get(k, "<unset>")) for f in flats}) > 1
    ]


def short_setting(key: str, value: object) -> str:
    """`agent._target_`, `evalrun.agents.noop.NoopAgent` -> `agent=NoopAgent`."""
    parts = key.split(".")
    if parts[-1] == "_target_" and len(parts) > 1:
        return f"{parts[-2]}={str(value).rsplit('.', 1)[-1]}"
    return f"{parts[-1]}={value}"


def job_label(run: RunFiles, keys: list[str]) -> str:
    flat = flatten(run.config)
    parts = [short_setting(k, flat.get(k)) for k in keys[:3]]
    return f"#{run.run_dir.name} " + (" ".join(parts) if parts else " ".join(run.log.overrides))


def sweep_html(sweep_dir: Path, runs: list[RunFiles]) -> str:
    keys = varying_keys(runs)
    labels = [job_label(r, keys) for r in runs]
    kmax = max(max(r.summary.ks) for r in runs)
    best = max(runs, key=lambda r: r.summary.overall.pass_at.get(1) or -1.0)
    heads = [(PASS_AT, 1)] + ([(PASS_AT, kmax), (PASS_HAT, kmax)] if kmax > 1 else [])
    plots = [
        bar_chart(
            [
                (label, r.summary.overall.pass_at.get(1) or 0.0)
                for label, r in zip(labels, runs, strict=True)
            ],
            title="pass@1 per job (whiskers: 95% interval)",
            fmt=lambda v: f"{v:.3f}",
            x_max=1.0,
            intervals=[_span(r) for r in runs],
        ),
        line_chart(
            [
                Series(
                    label,
                    [(k, r.summary.overall.pass_at.get(k)) for k in r.summary.ks],
                    PALETTE[i % len(PALETTE)],
                )
                for i, (label, r) in enumerate(zip(labels, runs, strict=True))
            ],
            title="pass@k against k per job",
            xs=list(range(1, kmax + 1)),
            x_label="k",
        ),
    ]
    return render(
        "sweep.html.j2",
        title=f"evalrun sweep · {sweep_dir.name}",
        sweep_name=sweep_dir.name,
        sweep_dir=str(sweep_dir),
        keys=keys,
        cards=[
            Card("jobs", str(len(runs))),
            Card(
                "best pass@1",
                fmt_rate(best.summary.overall.pass_at.get(1), 3),
                best.summary.overall.interval(PASS_AT, 1),
            ),
            Card("best job", f"#{best.run_dir.name}"),
            Card("samples", str(sum(r.summary.samples for r in runs))),
            Card("cost total", fmt_usd(_total_cost(runs))),
        ],
        plots=[svg(p) for p in plots],
        kmax=kmax,
        heads=heads,
        jobs=[_job(run, keys) for run in runs],
        matrix=matrix(runs),
    )


def _job(run: RunFiles, keys: list[str]) -> dict:
    flat, s = flatten(run.config), run.summary
    return {
        "num": int(run.run_dir.name),
        "name": run.run_dir.name,
        "href": quote(f"{run.run_dir.name}/{HTML_FILE}"),
        "settings": [str(flat.get(k, "—")) for k in keys],
        "agent": run.agent,
        "summary": s,
        "p50": s.latency["agent"].p50 if "agent" in s.latency else None,
    }


def _span(run: RunFiles) -> tuple[float, float] | None:
    est = run.summary.overall.interval(PASS_AT, 1)
    if est is None or est.low is None or est.high is None:
        return None
    return est.low, est.high


def _total_cost(runs: list[RunFiles]) -> float | None:
    costs = [r.summary.cost.total_usd for r in runs if r.summary.cost.total_usd is not None]
    return sum(costs) if costs else None


def matrix(runs: list[RunFiles]) -> dict:
    """Tasks x jobs: each task's passes / scored trials in each job (None: not in that job)."""
    task_ids = list(dict.fromkeys(t.task_id for r in runs for t in r.summary.tasks))
    per_job = [{t.task_id: t for t in r.summary.tasks} for r in runs]
    return {
        "jobs": [f"#{r.run_dir.name}" for r in runs],
        "rows": [(task_id, [stats.get(task_id) for stats in per_job]) for task_id in task_ids],
    }
