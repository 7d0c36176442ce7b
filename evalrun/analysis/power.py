"""Before an expensive run: how precise will it be, and how many tasks x trials does a comparison
need? (`evalrun power` prints the answer as a table.)

The variance comes from a baseline run when one is given (its per-task pass rates; with 2+
trials per task it also measures how much of the variance lies between tasks, the ICC), else from
an assumed pass rate (default 0.5, the widest case) and ICC (default 0.5). The formulas are in
`evalrun.analysis.stats` (Variance, half_width, tasks_for_half_width, tasks_to_detect). A dry run
prints the first line of the answer (`precision_note`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalrun.analysis.stats import DEFAULT_ICC, Variance, half_width, tasks_for_half_width

if TYPE_CHECKING:
    from evalrun.models.summary import Summary

ASSUMED_RATE = 0.5  # the widest case, when nothing says otherwise


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


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def precision_note(variance: Variance, tasks: int, trials: int, target: float = 0.10) -> str:
    """`with 23 tasks x 1 trial, a 95% interval on pass@1 is about ±0.20; ±0.10 needs ~91
    task-trials (91 tasks x 1 trial)`."""
    now = half_width(variance, tasks, trials)
    line = (
        f"with {plural(tasks, 'task')} x {plural(trials, 'trial')}, a 95% interval on pass@1 "
        f"is about ±{now:.2f}"
    )
    if now <= target:
        return line
    needed = tasks_for_half_width(variance, target, trials)
    return (
        f"{line}; ±{target:.2f} needs ~{needed * trials} task-trials "
        f"({plural(needed, 'task')} x {plural(trials, 'trial')})"
    )
