"""report.html: one self-contained page per run - headline numbers, a sortable task table with
why each task failed, plots, breakdowns by tag and difficulty, every sample's drill-down (the
prompt, why it did not pass, what the agent changed, outputs, the trajectory) and the config.

`write_html` works purely from the files in the run directory (`rundata.load_run`), so it can
re-render a run copied from elsewhere. This module turns a run into plain values; the page itself
is templates/run.html.j2, rendered with autoescape (`evalrun.report.page`). The sweep page
and the diff page live in their own modules (`sweep_html`, `diff_html`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from evalrun.models.records import Outcome, SampleRecord, ToolCall, WorkspaceDiff
from evalrun.models.summary import PASS_AT, PASS_HAT, PHASES, GroupStats, TaskStats
from evalrun.report.page import Card, fmt_rate, fmt_s, fmt_usd, render, svg
from evalrun.report.reasons import first_line, why, why_parts
from evalrun.report.rundata import HTML_FILE, RunFiles, clean_text
from evalrun.report.svg import PALETTE, Series, bar_chart, box_plot, line_chart

TEXT_CAP = 20_000  # characters of one text block shown in the page; the logs hold the rest
SHORT_REASON = 160  # the reason in a sample's one-line summary


def write_html(run: RunFiles) -> Path:
    """Write `<run_dir>/report.html` from the run's files and return its path."""
    path = run.run_dir / HTML_FILE
    path.write_text(run_html(run), encoding="utf-8")
    return path


def when(ts: float | None) -> str:
    if ts is None:
        return "—"
    return datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def capped(text: str | None) -> str:
    """Recorded output as shown in a block: plain text, the last `TEXT_CAP` characters."""
    body = clean_text(text)
    if len(body) > TEXT_CAP:
        cut = len(body) - TEXT_CAP
        body = f"[... {cut} characters cut; see the log files ...]\n" + body[-TEXT_CAP:]
    return body


_ESCAPES = re.compile(r"\\[nt]")


def readable(text: str | None) -> str:
    """A reason as a person reads it: a verifier's repr'd strings (`'1\\n2\\nFizz'`) with their
    `\\n` and `\\t` shown as line breaks and tabs, when the text has no real line breaks."""
    body = clean_text(text).strip()
    if "\n" in body or not _ESCAPES.search(body):
        return body
    return body.replace("\\n", "\n").replace("\\t", "\t")


@dataclass
class Step:
    name: str
    duration_s: float | None
    error: str
    tokens: str
    inline: str = ""
    blocks: list[tuple[str, str]] = field(default_factory=list)
    result: str = ""


def step_view(step: ToolCall) -> Step:
    """Short arguments inline, long ones (a file's new content) as blocks; tokens when known."""
    counts = [
        f"{count:,} {side}"
        for count, side in ((step.input_tokens, "in"), (step.output_tokens, "out"))
        if count is not None
    ]
    tokens = f"{' / '.join(counts)} tokens" if counts else ""  # an unknown side is left out, not 0
    view = Step(step.name, step.duration_s, clean_text(step.error), tokens)
    if step.args:
        line = json.dumps(step.args, ensure_ascii=False, default=str)
        if len(line) <= 120 and "\\n" not in line:
            view.inline = clean_text(line)
        else:
            view.blocks = [
                (str(k), capped(v if isinstance(v, str) else json.dumps(v, indent=2, default=str)))
                for k, v in step.args.items()
            ]
    view.result = capped(step.result) if step.result else ""
    return view


# a diff line's CSS class by how it starts; "+++" and "---" name a file, so they come first
_PATCH_KINDS = {"+++": "file", "---": "file", "# ": "file", "@@": "hunk", "+": "add", "-": "del"}


def patch_lines(changes: WorkspaceDiff) -> list[tuple[str, str]]:
    """The sample's unified diff, each line with its CSS class (add, del, hunk, file)."""
    return [
        (next((kind for start, kind in _PATCH_KINDS.items() if line.startswith(start)), ""), line)
        for line in capped(changes.patch()).splitlines()
    ]


def sample_view(run: RunFiles, rec: SampleRecord) -> dict[str, Any]:
    usage = rec.agent.usage
    reason = why(rec)
    facts = [
        ("outcome", rec.outcome.value),
        ("verify exit code", "—" if rec.verify_exit_code is None else str(rec.verify_exit_code)),
        ("timed out in", rec.timed_out_phase or "—"),
        ("attempts", str(rec.attempts)),
        ("phases", "  ".join(f"{p} {fmt_s(getattr(rec.phases, p))}" for p in PHASES)),
        ("started", when(rec.started_at)),
        (
            "usage",
            f"{usage.requests} requests, {usage.input_tokens:,} in / {usage.output_tokens:,} out "
            f"tokens, cost {fmt_usd(usage.cost_usd)}",
        ),
    ]
    for name, score in rec.scores.items():  # judges (with their reason), rewards, expectations
        said = rec.judge_reasons.get(name)
        label = f"judge {name}" if said is not None else f"score {name}"
        facts.append((label, fmt_rate(score, 3) + (f" — {said}" if said else "")))
    logs = run.run_dir / "samples" / rec.task_id / str(rec.trial)
    links = [
        (log.name, quote(f"samples/{rec.task_id}/{rec.trial}/{log.name}"))
        for log in (
            sorted(logs.glob("*.log")) + sorted(logs.glob("*.diff")) if logs.is_dir() else []
        )
    ]
    steps = [step_view(s) for s in rec.agent.trajectory]
    changes = rec.workspace_diff
    return {
        "record": rec,
        "took": sum(v for v in rec.phases.model_dump().values() if v is not None),
        "why": "\n\n".join(readable(p) for p in why_parts(rec))
        if rec.outcome is not Outcome.passed
        else "",
        "short": first_line(reason, SHORT_REASON),
        "text": " ".join([rec.outcome.value, reason, clean_text(rec.agent.error)]).lower(),
        "changes": changes,
        "patch": patch_lines(changes) if changes is not None and changes.files else [],
        "verify_output": capped(rec.verify_output),
        "agent_output": capped(rec.agent.output),
        "steps": steps,
        "step_tokens": any(s.tokens for s in steps),
        "facts": facts,
        "logs": links,
    }


def task_view(run: RunFiles, index: int, stats: TaskStats) -> dict[str, Any]:
    records = [r for r in run.records if r.task_id == stats.task_id]
    reasons = list(dict.fromkeys(why(r) for r in records if r.outcome is not Outcome.passed))
    own = " ".join([stats.task_id, stats.difficulty, *stats.tags]).lower()
    fields = run.log.task_fields(stats.task_id)
    return {
        "id": stats.task_id,
        "index": index,
        "stats": stats,
        "records": records,
        "rate": stats.passes / stats.n if stats.n else None,
        "failing": any(r.outcome is not Outcome.passed for r in records),
        "reason": reasons[0] if reasons else "",
        "reason_short": first_line(reasons[0], SHORT_REASON) if reasons else "",
        "more_reasons": len(reasons) - 1 if reasons else 0,
        "own_text": own,
        "text": " ".join([own, *reasons]).lower(),
        "prompt": run.prompt(stats.task_id),
        "fields": [(k, json.dumps(v, ensure_ascii=False)) for k, v in fields.items()],
        "samples": [sample_view(run, r) for r in records],
    }


def run_html(run: RunFiles, home: str | None = None) -> str:
    """The run's page; `home`: a link back to the page listing it (`evalrun view`)."""
    s = run.summary
    kmax = max(s.ks)
    o = s.overall
    heads = [(PASS_AT, 1)] + ([(PASS_AT, kmax), (PASS_HAT, kmax)] if kmax > 1 else [])
    headline = [Card(f"{b}{k}", fmt_rate(o.value(b, k), 3), o.interval(b, k)) for b, k in heads]
    if not s.scored:  # a rate over no scored sample is not a result
        headline[0] = Card("pass@1", "— (nothing scored)")
    wall = run.finished_at - run.started_at if run.started_at and run.finished_at else None
    headline.insert(1, Card("harness errors", str(s.errors)))
    headline += [
        Card("flaky tasks", str(o.flaky_tasks)),
        Card("passed / failed / errors", f"{s.passes} / {s.scored - s.passes} / {s.errors}"),
        Card("cost total", fmt_usd(s.cost.total_usd)),
        Card("agent latency p50", fmt_s(s.latency["agent"].p50 if "agent" in s.latency else None)),
        Card("wall time", fmt_s(wall)),
    ]
    index = {t.task_id: i for i, t in enumerate(s.tasks)}
    plotted, no_cost = plots(run)
    return render(
        "run.html.j2",
        title=f"evalrun · {s.run_id}",
        agent=run.agent,
        sandbox=run.plan.sandbox,
        trials=str(run.plan.trials),
        tasks_dir=run.plan.tasks_dir,
        source=run.plan.tasks_source.describe() if run.plan.tasks_source else None,
        started=when(run.started_at),
        status=run.state.describe() if run.state else "state unknown",
        state=run.state,
        partial=run.state is not None and not run.state.complete,
        run_dir=str(run.run_dir),
        headline=headline,
        plots=plotted,
        no_cost=no_cost,
        kmax=kmax,
        heads=heads,
        tasks=[task_view(run, i, t) for i, t in enumerate(s.tasks)],
        skipped=run.skipped,
        breakdowns=[
            (n, g) for n, g in (("By tag", s.by_tag), ("By difficulty", s.by_difficulty)) if g
        ],
        errors=[
            {
                "index": index.get(e.task_id, -1),
                "task_id": e.task_id,
                "trial": e.trial,
                "reason": clean_text(e.reason),
            }
            for e in s.error_samples
        ],
        overrides=" ".join(run.log.overrides) or "(none)",
        config_text=capped(run.log.config_text),
        fingerprints=[(t.id, t.fingerprint) for t in run.plan.tasks],
        home=home,
    )


def plots(run: RunFiles) -> tuple[list[Any], bool]:
    """The SVG plots (markup from `evalrun.report.svg`), and whether the cost plot is missing."""
    s = run.summary
    series = [
        Series(
            f"{base}k",
            [(k, s.overall.value(base, k)) for k in s.ks],
            PALETTE[i],
            dashed=i == 1,
            band=band(s.overall, base, s.ks),
        )
        for i, base in enumerate((PASS_AT, PASS_HAT))
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
    return [svg(p) for p in out], not priced


def band(group: GroupStats, base: str, ks: list[int]) -> list[tuple[float, float, float]]:
    """(k, low, high) of a pass metric's 95% interval at every k that has one."""
    return [
        (k, est.low, est.high)
        for k in ks
        if (est := group.interval(base, k)) is not None
        and est.low is not None
        and est.high is not None
    ]
