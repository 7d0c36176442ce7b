"""`evalrun power`: before an expensive run, how precise will it be, and how many tasks x trials
does a comparison need?

```
evalrun power [RUN_DIR | baseline=<run-dir>] [overrides] [--delta 0.1] [--width 0.1]
              [--rate P] [--icc R] [--corr R] [--power 0.8]
```

The plan is the composed config - the same overrides as a run (`tags=python trials=3`) - so the
answer is about the run those overrides would make. The variance comes from a baseline run when
one is given, else from `--rate` (default 0.5, the widest case) and `--icc` (default 0.5)
(`evalrun.analysis.power.variance_for`). `--corr` is the assumed correlation of the two compared
agents' per-task pass rates (default 0.5): an agent and its next version find the same tasks
hard. The formulas are in `evalrun.analysis.stats`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from evalrun.cli.arguments import CommandParser
from evalrun.cli.hydra import compose_config
from evalrun.console import styled
from evalrun.errors import ExitCode

if TYPE_CHECKING:  # the statistics load with the command, not with every `evalrun`
    from evalrun.analysis.stats import Variance

TRIAL_OPTIONS = (1, 2, 3, 5, 10)
DEFAULT_DELTA = 0.10  # the change in pass@1 to detect
DEFAULT_WIDTH = 0.10  # the ± half-width of pass@1's 95% interval wanted


@dataclass(frozen=True)
class PowerOptions:
    """What `evalrun power` was asked (the options; their defaults are the parser's)."""

    delta: float
    width: float
    rate: float | None
    icc: float | None
    corr: float
    power: float


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
    from evalrun.analysis.power import ASSUMED_RATE
    from evalrun.analysis.stats import DEFAULT_CORRELATION, DEFAULT_ICC, DEFAULT_POWER

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
        default=DEFAULT_DELTA,
        help=f"the change to detect (default {DEFAULT_DELTA:g})",
    )
    parser.add_argument(
        "--width",
        type=between,
        default=DEFAULT_WIDTH,
        help=f"the ± half-width wanted (default {DEFAULT_WIDTH:g})",
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
        default=DEFAULT_CORRELATION,
        help=f"correlation of the two agents' task rates (default {DEFAULT_CORRELATION:g})",
    )
    parser.add_argument(
        "--power",
        type=between,
        default=DEFAULT_POWER,
        help=f"the power of the comparison (default {DEFAULT_POWER:g})",
    )
    return parser


def report(
    variance: Variance, tasks: int, trials: int, options: PowerOptions, console: Console
) -> None:
    """Print the precision line and the tasks x trials table."""
    from evalrun.analysis.power import precision_note
    from evalrun.analysis.stats import half_width, tasks_for_half_width, tasks_to_detect

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


def power_command(args: list[str], console: Console) -> int:
    """`evalrun power ...` (module docstring)."""
    from evalrun.analysis.power import describe, plural, variance_for
    from evalrun.run.plan import build

    ns = parser().parse(args)
    options = PowerOptions(
        delta=ns.delta, width=ns.width, rate=ns.rate, icc=ns.icc, corr=ns.corr, power=ns.power
    )
    overrides = ns.overrides
    if ns.run_dir is not None:  # the positional baseline run directory
        overrides = [o for o in overrides if not o.startswith("baseline=")]
        overrides.append(f"baseline={ns.run_dir}")
    plan = build(compose_config([*overrides, "dry_run=true"]))
    base = plan.profile.baseline
    baseline = base.summary if base is not None else None
    variance = variance_for(baseline, options.rate, options.icc, options.delta)
    tasks, trials = len(plan.tasks), plan.trials
    console.print(
        f"plan       {plural(tasks, 'task')} x {plural(trials, 'trial')} from {plan.tasks_dir}",
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
    return ExitCode.OK
