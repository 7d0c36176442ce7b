"""report.html: one self-contained page per run - headline numbers, a sortable task table, plots,
breakdowns by tag and difficulty, every sample's drill-down and the resolved config.

`render_html(run_dir)` works purely from the files in the run directory (see `rundata`), so it can
re-render a run copied from elsewhere. Agent output is untrusted: every piece of recorded text is
escaped, and the page's CSP would block a script that slipped through anyway (see `page`).
The sweep page (`render_sweep_html`) and the diff page (`render_diff_html`) live in their own
modules and are re-exported here, so every HTML report is reachable from this one name.
"""

from __future__ import annotations

import json
from datetime import datetime
from html import escape
from pathlib import Path
from urllib.parse import quote

from evalrun.metric_table import PASS_AT, PASS_HAT, PHASES
from evalrun.metrics import GroupStats
from evalrun.records import SampleRecord
from evalrun.report.diff_html import render_diff_html
from evalrun.report.page import (
    Cell,
    cards,
    estimate_cell,
    fmt_rate,
    fmt_s,
    fmt_usd,
    num_cell,
    page,
    rate_cell,
    table,
    text_cell,
)
from evalrun.report.rundata import HTML_FILE, RunFiles, clean_text, load_run
from evalrun.report.svg import PALETTE, Series, bar_chart, box_plot, line_chart
from evalrun.report.sweep_html import render_sweep_html

__all__ = ["render_diff_html", "render_html", "render_sweep_html", "run_html", "write_html"]

TEXT_CAP = 20_000  # characters of one text block shown in the page; the logs hold the rest


def render_html(run_dir: Path) -> Path:
    """Write `<run_dir>/report.html` from the run's files and return its path.
    Raises `UsageError` when `run_dir` is not a run directory."""
    return write_html(load_run(Path(run_dir)))


def write_html(run: RunFiles) -> Path:
    path = run.run_dir / HTML_FILE
    path.write_text(run_html(run), encoding="utf-8")
    return path


def when(ts: float | None) -> str:
    if ts is None:
        return "—"
    return datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def sample_anchor(index: int, trial: int) -> str:
    """Element id of a sample's drill-down; task ids are not trusted to be valid ids."""
    return f"s-{index}-{trial}"


def run_html(run: RunFiles) -> str:
    s = run.summary
    kmax = max(s.ks)
    title = f"evalrun · {s.run_id}"
    wall = run.finished_at - run.started_at if run.started_at and run.finished_at else None
    status = run.state.describe() if run.state else "state unknown"
    meta = (
        f"agent <b>{escape(run.agent)}</b> · sandbox <b>{escape(run.plan.sandbox)}</b>"
        f" · {len(s.tasks)} tasks &times; {run.plan.trials} trials"
        f" · started {escape(when(run.started_at))} · {escape(status)}"
        f"<br>tasks from <code>{escape(run.plan.tasks_dir)}</code>"
    )
    o = s.overall
    heads = [(PASS_AT, 1)] + ([(PASS_AT, kmax), (PASS_HAT, kmax)] if kmax > 1 else [])
    headline: list = [
        (f"{base}{k}", fmt_rate(o.value(base, k), 3), o.interval(base, k)) for base, k in heads
    ]
    if not s.scored:  # a rate over no scored sample is not a result
        headline[0] = ("pass@1", "— (nothing scored)", None)
    headline.insert(1, ("harness errors", str(s.errors)))
    headline += [
        ("flaky tasks", str(s.overall.flaky_tasks)),
        ("passed / failed / errors", f"{s.passes} / {s.scored - s.passes} / {s.errors}"),
        ("cost total", fmt_usd(s.cost.total_usd)),
        ("agent latency p50", fmt_s(s.latency["agent"].p50 if "agent" in s.latency else None)),
        ("wall time", fmt_s(wall)),
    ]
    partial = run.state is not None and not run.state.complete
    banner = (
        f'<p class="partial" id="run-state"><b>Partial run</b>: {escape(status)} - the numbers '
        "below cover only the recorded cells. Finish it with "
        f"<code>evalrun resume={escape(str(run.run_dir))}</code>.</p>"
        if partial
        else ""
    )
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">{meta}</p>',
        banner,
        cards(headline),
        "<h2>Plots</h2>",
        f'<div class="plots">{plots(run)}</div>',
        "<h2>Tasks</h2>",
        task_table(run),
        skipped_section(run),
        group_section("By tag", s.by_tag, s.ks),
        group_section("By difficulty", s.by_difficulty, s.ks),
        errors_section(run),
        "<h2>Samples</h2>",
        '<p class="muted">Click a task, then a trial: verify output, agent output, the '
        "trajectory step by step, errors.</p>",
        samples_section(run),
        "<h2>Config</h2>",
        config_section(run),
    ]
    return page(title, "\n".join(b for b in body if b))


def plots(run: RunFiles) -> str:
    s = run.summary
    series = [
        Series(
            "pass@k",
            [(k, s.overall.pass_at.get(k)) for k in s.ks],
            PALETTE[0],
            band=band(s.overall, PASS_AT, s.ks),
        ),
        Series(
            "pass^k",
            [(k, s.overall.pass_hat.get(k)) for k in s.ks],
            PALETTE[1],
            True,
            band=band(s.overall, PASS_HAT, s.ks),
        ),
    ]
    for i, (name, group) in enumerate(s.by_difficulty.items()):
        points = [(k, group.pass_at.get(k)) for k in s.ks]
        series.append(Series(f"pass@k {name}", points, PALETTE[2 + i % 5], dashed=True, thin=True))
    title = "pass@k and pass^k against k (shaded: 95% interval)"
    out = [line_chart(series, title=title, xs=s.ks, x_label="k")]
    for phase in PHASES:
        samples = [
            (value, r.outcome.value, f"{r.task_id}#{r.trial}")
            for r in run.records
            if (value := getattr(r.phases, phase)) is not None
        ]
        out.append(box_plot(samples, title=f"{phase} latency per sample"))
    priced = sorted(
        ((t.task_id, t.cost_usd) for t in s.tasks if t.cost_usd is not None),
        key=lambda item: -item[1],
    )
    if priced:
        out.append(bar_chart(priced, title="cost per task (all trials)", fmt=fmt_usd))
    else:
        out.append('<p class="muted">No cost plot: the agent reported no cost for any sample.</p>')
    return "".join(out)


def band(group: GroupStats, base: str, ks: list[int]) -> list[tuple[float, float, float]]:
    """(k, low, high) of a pass metric's 95% interval at every k that has one."""
    return [
        (k, est.low, est.high)
        for k in ks
        if (est := group.interval(base, k)) is not None
        and est.low is not None
        and est.high is not None
    ]


def outcome_dots(run: RunFiles, index: int, task_id: str) -> str:
    return "".join(
        f'<a class="dot {r.outcome.value}" href="#{sample_anchor(index, r.trial)}" '
        f'title="trial {r.trial}: {r.outcome.value}"></a>'
        for r in run.records
        if r.task_id == task_id
    )


def task_table(run: RunFiles) -> str:
    s = run.summary
    kmax = max(s.ks)
    headers = [("task", False), ("difficulty", False), ("tags", False), ("trials", False)]
    headers += [("passed", True), ("pass@1", True)]
    if kmax > 1:
        headers += [(f"pass@{kmax}", True), (f"pass^{kmax}", True)]
    headers += [("flaky", False), ("errors", True), ("mean latency", True), ("cost", True)]
    rows = []
    for index, t in enumerate(s.tasks):
        rate = t.passes / t.n if t.n else None
        row = [
            Cell(f'<a href="#t-{index}">{escape(t.task_id)}</a>', t.task_id),
            text_cell(t.difficulty),
            text_cell(", ".join(t.tags)),
            Cell(outcome_dots(run, index, t.task_id), rate),
            num_cell(rate, f"{t.passes}/{t.n}"),
            rate_cell(t.pass_at.get(1)),
        ]
        if kmax > 1:
            row += [rate_cell(t.pass_at.get(kmax)), rate_cell(t.pass_hat.get(kmax))]
        row += [
            Cell('<span class="flaky">flaky</span>' if t.flaky else "", "flaky" if t.flaky else ""),
            num_cell(t.errors, str(t.errors) if t.errors else ""),
            num_cell(t.mean_latency_s, fmt_s(t.mean_latency_s)),
            num_cell(t.cost_usd, fmt_usd(t.cost_usd)),
        ]
        rows.append(row)
    return table(headers, rows, css="sortable tasks")


def group_section(title: str, groups: dict[str, GroupStats], ks: list[int]) -> str:
    if not groups:
        return ""
    kmax = max(ks)
    headers = [("group", False), ("tasks", True), ("pass@1", True)]
    if kmax > 1:
        headers += [(f"pass@{kmax}", True), (f"pass^{kmax}", True)]
    headers.append(("flaky tasks", True))
    rows = []
    for name, g in groups.items():
        row = [text_cell(name), num_cell(g.tasks, str(g.tasks))]
        row += [
            estimate_cell(g.value(base, k), g.interval(base, k))
            for base, k in [(PASS_AT, 1)]
            + ([(PASS_AT, kmax), (PASS_HAT, kmax)] if kmax > 1 else [])
        ]
        row.append(num_cell(g.flaky_tasks, str(g.flaky_tasks)))
        rows.append(row)
    return f"<h2>{escape(title)}</h2>" + table(headers, rows, css="sortable groups")


def errors_section(run: RunFiles) -> str:
    errors = run.summary.error_samples
    if not errors:
        return ""
    index = {t.task_id: i for i, t in enumerate(run.summary.tasks)}
    items = "".join(
        f'<li><a href="#{sample_anchor(index.get(e.task_id, -1), e.trial)}">'
        f"{escape(e.task_id)}#{e.trial}</a>: {escape(clean_text(e.reason))}</li>"
        for e in errors
    )
    return (
        f'<h2>Harness errors ({len(errors)})</h2><p class="muted">No verdict could be '
        f"produced for these samples; they are kept out of every pass rate.</p><ul>{items}</ul>"
    )


def pre(text: str | None) -> str:
    body = clean_text(text)
    if len(body) > TEXT_CAP:
        body = (
            f"[... {len(body) - TEXT_CAP} characters cut; see the log files ...]\n"
            + body[-TEXT_CAP:]
        )
    return f"<pre>{escape(body)}</pre>" if body.strip() else '<p class="muted">(empty)</p>'


def step_args(args: dict) -> str:
    """Short arguments inline, long ones (a file's new content) as a block."""
    if not args:
        return ""
    line = json.dumps(args, ensure_ascii=False, default=str)
    if len(line) <= 120 and "\\n" not in line:
        return f" <code>{escape(clean_text(line))}</code>"
    blocks = (
        f"<div class=muted>{escape(str(key))}</div>"
        + pre(value if isinstance(value, str) else json.dumps(value, indent=2, default=str))
        for key, value in args.items()
    )
    return "".join(blocks)


def sample_body(run: RunFiles, rec: SampleRecord) -> str:
    usage = rec.agent.usage
    facts = [
        ("outcome", rec.outcome.value),
        ("reason", clean_text(rec.reason) or "—"),
        ("verify exit code", "—" if rec.verify_exit_code is None else str(rec.verify_exit_code)),
        ("timed out in", rec.timed_out_phase or "—"),
        ("attempts", str(rec.attempts)),
        ("phases", "  ".join(f"{p} {fmt_s(getattr(rec.phases, p))}" for p in PHASES)),
        ("started", when(rec.started_at)),
        (
            "usage",
            f"{usage.requests} requests, {usage.input_tokens} in / {usage.output_tokens} out "
            f"tokens, cost {fmt_usd(usage.cost_usd)}",
        ),
    ]
    for name, score in rec.scores.items():  # judges (with their reason), rewards, expectations
        reason = rec.judge_reasons.get(name)
        label = f"judge {name}" if reason is not None else f"score {name}"
        facts.append((label, fmt_rate(score, 3) + (f" — {reason}" if reason else "")))
    kv = "".join(f"<div class=muted>{escape(k)}</div><div>{escape(v)}</div>" for k, v in facts)
    parts = [f'<div class="kv">{kv}</div>']
    if rec.agent.error:
        parts += ["<h4>Agent error</h4>", pre(rec.agent.error)]
    parts += ["<h4>Verify output</h4>", pre(rec.verify_output)]
    parts += ["<h4>Agent output</h4>", pre(rec.agent.output)]
    parts.append(f"<h4>Trajectory ({len(rec.agent.trajectory)} steps)</h4>")
    steps = []
    for step in rec.agent.trajectory:
        error = f' <span class="down">{escape(clean_text(step.error))}</span>' if step.error else ""
        steps.append(
            f"<li><b>{escape(step.name)}</b> <span class=muted>{fmt_s(step.duration_s)}</span>"
            f"{error}{step_args(step.args)}{pre(step.result) if step.result else ''}</li>"
        )
    parts.append(f'<ol class="steps">{"".join(steps)}</ol>' if steps else "")
    logs = run.run_dir / "samples" / rec.task_id / str(rec.trial)
    if logs.is_dir():
        links = " · ".join(
            f'<a href="{quote(f"samples/{rec.task_id}/{rec.trial}/{log.name}")}">'
            f"{escape(log.name)}</a>"
            for log in sorted(logs.glob("*.log"))
        )
        parts.append(f"<p>Full logs: {links}</p>")
    return "".join(parts)


def skipped_section(run: RunFiles) -> str:
    """The suite's tasks that did not run, and why."""
    if not run.skipped:
        return ""
    items = "".join(
        f"<li><code>{escape(s.id)}</code> ({escape(s.kind)}): {escape(s.reason)}</li>"
        for s in run.skipped
    )
    return f"<h3>Skipped: {len(run.skipped)} tasks did not run</h3><ul>{items}</ul>"


def fields_table(fields: dict) -> str:
    """A task's kept-but-unused file fields (dotted key, JSON value)."""
    rows = "".join(
        f"<tr><td><code>{escape(key)}</code></td><td><code>"
        f"{escape(json.dumps(value, ensure_ascii=False))}</code></td></tr>"
        for key, value in fields.items()
    )
    return (
        "<details><summary>task file fields evalrun keeps but does not use</summary>"
        f"<table><thead><tr><th>key</th><th>value</th></tr></thead><tbody>{rows}</tbody>"
        "</table></details>"
    )


def samples_section(run: RunFiles) -> str:
    out = []
    for index, t in enumerate(run.summary.tasks):
        recs = [r for r in run.records if r.task_id == t.task_id]
        inner = "".join(
            f'<details class="sample" id="{sample_anchor(index, r.trial)}"><summary>'
            f'<span class="dot {r.outcome.value}"></span> trial {r.trial} · {r.outcome.value}'
            f" · {fmt_s(sum(v for v in r.phases.model_dump().values() if v is not None))}"
            f"{' · ' + escape(clean_text(r.reason)[:160]) if r.reason else ''}</summary>"
            f'<div class="sample-body">{sample_body(run, r)}</div></details>'
            for r in recs
        )
        fields = run.task_fields(t.task_id)
        out.append(
            f'<details class="task" id="t-{index}"><summary>{escape(t.task_id)} '
            f'<span class="muted">{t.passes}/{t.n} passed'
            f"{f', {t.errors} errors' if t.errors else ''}</span></summary>"
            f"{fields_table(fields) if fields else ''}"
            f"{inner or '<p class=muted>no sample recorded</p>'}</details>"
        )
    return "".join(out)


def config_section(run: RunFiles) -> str:
    overrides = " ".join(run.overrides) or "(none)"
    fingerprints = "".join(
        f"<tr><td>{escape(t.id)}</td><td><code>{escape(t.fingerprint[:16])}</code></td></tr>"
        for t in run.plan.tasks
    )
    return (
        f"<p>Overrides: <code>{escape(overrides)}</code></p>"
        "<details open><summary>config.yaml (resolved, secrets redacted)</summary>"
        f"{pre(run.config_text)}</details>"
        "<details><summary>task fingerprints (plan.json)</summary>"
        f"<table><thead><tr><th>task</th><th>sha256</th></tr></thead>"
        f"<tbody>{fingerprints}</tbody></table></details>"
    )
