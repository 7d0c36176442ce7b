"""Live progress: a rich bar on a terminal, one line per finished task otherwise (CI logs).

The bar is green while every sample so far passed, yellow once one failed, red once one ended
in a harness error; the clock beside it is labelled (`ETA 0:01:20`).
"""

from __future__ import annotations

import time
from collections import Counter

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from evalrun.models.records import Outcome, SampleRecord


class RunProgress:
    def __init__(self, total: int, trials_per_task: dict[str, int], console: Console):
        self.console = console
        self.total = total
        self.counts: Counter[Outcome] = Counter()
        self._left = dict(trials_per_task)
        self._per_task: dict[str, Counter[Outcome]] = {}
        self._started = time.monotonic()
        self._bar: Progress | None = None
        if console.is_terminal and total:
            self._column = BarColumn(complete_style="green", finished_style="green")
            self._bar = Progress(
                TextColumn("[bold]evalrun"),
                self._column,
                MofNCompleteColumn(),
                TextColumn("{task.fields[counts]}"),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console,
                transient=True,
            )
            self._task = self._bar.add_task("run", total=total, counts="")

    def __enter__(self) -> RunProgress:
        if self._bar:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar:
            self._bar.stop()

    def _counts(self) -> str:
        scored = self.counts[Outcome.passed] + self.counts[Outcome.failed]
        rate = f"{self.counts[Outcome.passed] / scored:.2f}" if scored else "—"
        return (
            f"[green]{self.counts[Outcome.passed]} pass[/] "
            f"[red]{self.counts[Outcome.failed]} fail[/] "
            f"[yellow]{self.counts[Outcome.error]} error[/]  pass@1 {rate}"
        )

    def colour(self) -> str:
        """green: all passing so far; yellow: a sample failed; red: a harness error."""
        if self.counts[Outcome.error]:
            return "red"
        return "yellow" if self.counts[Outcome.failed] else "green"

    def advance(self, record: SampleRecord) -> None:
        self.counts[record.outcome] += 1
        per = self._per_task.setdefault(record.task_id, Counter())
        per[record.outcome] += 1
        if self._bar:
            self._column.complete_style = self._column.finished_style = self.colour()
            self._bar.update(self._task, advance=1, counts=self._counts())
            return
        self._left[record.task_id] = self._left.get(record.task_id, 1) - 1
        if self._left[record.task_id] <= 0:
            done = sum(self.counts.values())
            self.console.print(
                f"[{done}/{self.total}] {record.task_id}: "
                f"{per[Outcome.passed]} pass, {per[Outcome.failed]} fail, "
                f"{per[Outcome.error]} error  ({time.monotonic() - self._started:.1f}s)",
                highlight=False,
            )
