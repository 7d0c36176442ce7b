"""What `evalrun online` prints at the end: what was chosen, each judge's mean with its interval,
the worst threads with the judge's reasons, what judging cost, and what reached Opik."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.text import Text

from evalrun.console import styled
from evalrun.integrations.opik.rundir import OnlineState
from evalrun.models.summary import JudgedSample, Summary

REASON_CHARS = 160
WORST = 5


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def print_online(console: Console, state: OnlineState, summary: Summary, run_dir: Path) -> None:
    unit = state.level
    console.print(
        Text(
            f"online evaluation of Opik project {state.project} ({unit}): "
            f"{state.listed} listed, {state.already_scored} already scored by these judges, "
            f"{state.not_sampled} not sampled, {state.selected} chosen, {state.judged} judged"
        ),
        soft_wrap=True,
    )
    for name, judge in summary.judges.items():
        estimate = judge.interval
        if estimate is None:
            shown = "no score"
        elif estimate.se is None:
            shown = f"{estimate.value:.3f} (one thread: no interval)"
        else:
            shown = f"{estimate.plus_minus(3)}  95% CI {estimate.interval(3)}"
        failed = f", {judge.failed} failed" if judge.failed else ""
        console.print(Text(f"  {name:<24} {shown}  n={judge.scored}{failed}"), soft_wrap=True)
    if not state.selected:
        console.print(f"  nothing new to judge: no {unit} left after skipping and sampling")
    pass_at_1 = summary.overall.pass_at.get(1)
    if summary.samples:
        rate = "undefined" if pass_at_1 is None else f"{pass_at_1:.3f}"
        console.print(
            f"  pass@1 (every judge at or above the threshold) {rate}; "
            f"{summary.errors} with a failed judgement",
            highlight=False,
            soft_wrap=True,
        )
    lowest: dict[str, tuple[float, str, JudgedSample]] = {}  # per thread: its lowest score
    for name, judge in summary.judges.items():
        for item in judge.worst:
            if item.task_id not in lowest or item.score < lowest[item.task_id][0]:
                lowest[item.task_id] = (item.score, name, item)
    worst = sorted(lowest.values(), key=lambda entry: (entry[0], entry[2].task_id))[:WORST]
    if worst:
        console.print(f"worst {unit}:")
    for score, name, item in worst:
        reason = " ".join(item.reason.split())[:REASON_CHARS]
        console.print(Text(f"  {item.task_id}  {name} {score:.2f}  {reason}"), soft_wrap=True)
    budget = f" of a ${state.budget_usd:g} budget" if state.budget_usd is not None else ""
    if state.unpriced_calls:
        spend = (
            f"judge spend unknown: {state.unpriced_calls} of {state.judge_calls} calls had no "
            "price (set judge_price.input_usd_per_mtok and output_usd_per_mtok)"
        )
    else:
        spend = f"judge spend {_usd(state.judge_cost_usd)}{budget} ({state.judge_calls} calls)"
    console.print(spend, highlight=False, soft_wrap=True)
    console.print(
        Text(
            f"feedback: {len(state.delivered)} {unit} scored in {state.project}"
            + (f", {len(state.undelivered)} not delivered" if state.undelivered else "")
            + f"; evaluation traces in project {state.eval_project}"
        ),
        soft_wrap=True,
    )
    stopped = {
        "budget": ("stopped at the budget", "; the rest were not", " budget_usd=<more>"),
        "interrupted": ("interrupted", "", ""),
    }.get(state.stopped or "")
    if stopped is not None:
        why, rest, more = stopped
        console.print(
            styled("[yellow]{}:[/]", why),
            Text(
                f"{state.judged} of {state.selected} judged{rest}. "
                f"Continue with: evalrun online resume={run_dir}{more}"
            ),
            soft_wrap=True,
        )
    console.print(Text(f"run dir: {run_dir}"), soft_wrap=True)
