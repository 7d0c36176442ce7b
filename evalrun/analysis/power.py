"""`evalrun power`: before an expensive run, how precise will it be, and how many tasks x trials
does a comparison need?

```
evalrun power [RUN_DIR | baseline=<run-dir>] [overrides] [--delta 0.1] [--width 0.1]
              [--rate P] [--icc R] [--corr R] [--power 0.8]
```

The plan is the composed config - the same overrides as a run (`tags=python trials=3`) - so the
answer is about the run those overrides would make. The variance comes from a baseline run when
one is given (its per-task pass rates; with 2+ trials per task it also measures how much of the
variance lies between tasks, the ICC), else from `--rate` (default 0.5, the widest case) and
`--icc` (default 0.5). `--corr` is the assumed correlation of the two compared agents' per-task
pass rates (default 0.5): an agent and its next version find the same tasks hard. The formulas
are in `evalrun.analysis.stats` (Variance, half_width, tasks_for_half_width, tasks_to_detect). A
dry run
prints the first of these lines (`precision_note`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from evalrun.analysis.stats import (
    DEFAULT_CORRELATION,
    DEFAULT_ICC,
    DEFAULT_POWER,
    Variance,
    half_width,
    tasks_for_half_width,
    tasks_to_detect,
)
from evalrun.cli.arguments import CommandParser
from evalrun.console import styled

if TYPE_CHECKING:
    from evalrun.analysis.metrics import Summary

TRIAL_OPTIONS = (1, 2, 3, 5, 10)
ASSUMED_RATE = 0.5  # the widest case, when nothing says otherwise


@dataclass(frozen=True)
class PowerOptions:
    delta: float = 0.10
    width: float = 0.10
    rate: float | None = None
    icc: float | None = None
    corr: float = DEFAULT_CORRELATION
    power: float = DEFAULT_POWER


def variance_for(
    summary: Summary | None, rate: float | None, icc: float | None, delta: float = 0.10
) -> Variance:
    """From the baseline's tasks when there is one (unless `rate` overrides it), else assumed.

    A baseline within `delta` of 0 or 1 shows almost no variance (every task passes, or none
    does), which says little about a run that moves: its rate is then moved to `delta` from
    the edge - where a run that changed by `delta` would be - keeping its measured ICC."""
    icc_or_default = DEFAULT_ICC if icc is None else icc
    if summary is not None and rate is None:
        measured = Variance.from_tasks([(t.passes, t.n) for t in summary.tasks], icc_or_default)
        if measured is not None and delta <= measured.rate <= 1 - delta:
            return measured
        if measured is not None:
            edge = min(max(measured.rate, delta), 1 - delta)
            spread = measured.between + measured.within
            kept = measured.icc if spread > 0 and icc is None else icc_or_default
            return Variance.assumed(edge, kept)
    return Variance.assumed(ASSUMED_RATE if rate is None else rate, icc_or_default)


def describe(variance: Variance) -> str:
    how = "measured" if variance.measured else "assumed"
    return f"pass@1 {variance.rate:.2f}, ICC {variance.icc:.2f} ({how})"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def precision_note(variance: Variance, tasks: int, trials: int, target: float = 0.10) -> str:
    """`with 23 tasks x 1 trial, a 95% interval on pass@1 is about ±0.20; ±0.10 needs ~91
    task-trials (91 tasks x 1 trial)`."""
    now = half_width(variance, tasks, trials)
    line = (
        f"with {_plural(tasks, 'task')} x {_plural(trials, 'trial')}, a 95% interval on pass@1 "
        f"is about ±{now:.2f}"
    )
    if now <= target:
        return line
    needed = tasks_for_half_width(variance, target, trials)
    return (
        f"{line}; ±{target:.2f} needs ~{needed * trials} task-trials "
        f"({_plural(needed, 'task')} x {_plural(trials, 'trial')})"
    )


def _fraction(low_open: bool) -> Callable[[str], float]:
    """An argparse type: a number in [0, 1], or in (0, 1) when `low_open`."""

    def parse(raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {raw!r}") from None
        if low_open and not 0 < value < 1:
            raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {value:g}")
        if not 0 <= value <= 1:
            raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {value:g}")
        return value

    return parse


def parser() -> CommandParser:
    """`evalrun power`'s arguments (see the module docstring)."""
    defaults = PowerOptions()
    parser = CommandParser(
        "power",
        "How precise a run will be, and how many tasks x trials a comparison needs.",
        overrides=True,
        epilog="overrides choose the plan like a run's: tags=python trials=3 baseline=<run-dir>",
    )
    parser.add_argument(
        "run_dir", metavar="RUN_DIR", nargs="?", help="a baseline run to measure the variance on"
    )
    between = _fraction(low_open=True)
    parser.add_argument(
        "--delta",
        type=between,
        default=defaults.delta,
        help=f"the change to detect (default {defaults.delta:g})",
    )
    parser.add_argument(
        "--width",
        type=between,
        default=defaults.width,
        help=f"the ± half-width wanted (default {defaults.width:g})",
    )
    parser.add_argument(
        "--rate",
        type=_fraction(low_open=False),
        help=f"assumed pass@1 without a baseline (default {ASSUMED_RATE:g})",
    )
    parser.add_argument(
        "--icc",
        type=_fraction(low_open=False),
        help=f"assumed between-task share of the variance (default {DEFAULT_ICC:g})",
    )
    parser.add_argument(
        "--corr",
        type=_fraction(low_open=False),
        default=defaults.corr,
        help=f"correlation of the two agents' task rates (default {defaults.corr:g})",
    )
    parser.add_argument(
        "--power",
        type=between,
        default=defaults.power,
        help=f"the power of the comparison (default {defaults.power:g})",
    )
    return parser


def parse_args(args: list[str]) -> tuple[PowerOptions, list[str], str | None]:
    """Options, Hydra overrides, and the positional baseline run directory (if any)."""
    ns = parser().parse(args)
    options = PowerOptions(
        delta=ns.delta, width=ns.width, rate=ns.rate, icc=ns.icc, corr=ns.corr, power=ns.power
    )
    return options, ns.overrides, ns.run_dir


def report(
    variance: Variance, tasks: int, trials: int, options: PowerOptions, console: Console
) -> None:
    """Print the precision line and the tasks x trials table."""
    console.print(f"precision  {precision_note(variance, tasks, trials, options.width)}")
    console.print(
        f"detect     a change of {options.delta:.2f} in pass@1: {options.power:.0%} power, "
        f"p < 0.05, paired over the same tasks (the two agents' per-task pass rates "
        f"correlated {options.corr:.2f}, assumed)",
        highlight=False,
    )
    table = Table(header_style="bold")
    for column in (
        "trials per task",
        f"± with {tasks} tasks",
        f"tasks for ±{options.width:.2f}",
        f"tasks to detect {options.delta:.2f}",
        "task-trials to detect",
    ):
        table.add_column(column, justify="right")
    for k in sorted({*TRIAL_OPTIONS, trials}):
        detect = tasks_to_detect(
            variance, options.delta, k, power=options.power, correlation=options.corr
        )
        mark = " (plan)" if k == trials else ""
        table.add_row(
            f"{k}{mark}",
            f"±{half_width(variance, tasks, k):.2f}",
            str(tasks_for_half_width(variance, options.width, k)),
            styled("{} [yellow]> suite[/]" if detect > tasks else "{}", detect),
            str(detect * k),
        )
    console.print(table)
    if variance.icc >= 0.5:
        console.print(
            styled(
                "[dim]Most of the variance lies between tasks: more tasks buy far more precision "
                "than more trials of the same tasks.[/]"
            )
        )
    console.print(
        styled(
            "[dim]The significance test (`evalrun diff`, `significant: true` drops) needs at "
            "least 6 tasks that changed before any p can fall below 0.05.[/]"
        )
    )


def power_command(args: list[str], compose: Callable[[list[str]], Any], console: Console) -> int:
    """`evalrun power ...` (module docstring); `compose` is the CLI's `compose_config`."""
    from evalrun.run.plan import build

    options, overrides, run_dir = parse_args(args)
    if run_dir is not None:
        overrides = [o for o in overrides if not o.startswith("baseline=")]
        overrides.append(f"baseline={run_dir}")
    plan = build(compose([*overrides, "dry_run=true"]))
    base = plan.profile.baseline
    baseline = base.summary if base is not None else None
    variance = variance_for(baseline, options.rate, options.icc, options.delta)
    tasks, trials = len(plan.tasks), plan.trials
    console.print(
        f"plan       {_plural(tasks, 'task')} x {_plural(trials, 'trial')} from {plan.tasks_dir}",
        highlight=False,
    )
    if base is not None and options.rate is None:
        shape = max((t.n for t in base.summary.tasks), default=0)
        source = f"baseline {base.run_dir} ({len(base.summary.tasks)} tasks, {shape} trials each)"
        rate = base.summary.overall.pass_at.get(1)
        if not variance.measured and rate is not None:
            source += (
                f"; its pass@1 {rate:.2f} is within {options.delta:.2f} of the edge, so the plan "
                f"uses {variance.rate:.2f}, where a run that moved by {options.delta:.2f} would be"
            )
    else:
        source = "no baseline (give RUN_DIR or baseline=<run-dir> to measure it)"
    console.print(
        f"variance   {describe(variance)}; ICC is the between-task share of the variance; {source}",
        highlight=False,
    )
    report(variance, tasks, trials, options, console)
    return 0
