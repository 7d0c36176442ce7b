"""The live progress bar: green while every sample passes, yellow after a failure, red after a
harness error; its clock is labelled."""

from __future__ import annotations

import io

from rich.console import Console

from evalrun.models.records import Outcome, SampleRecord
from evalrun.run.progress import RunProgress

GREEN, YELLOW, RED = "\x1b[32m━", "\x1b[33m━", "\x1b[31m━"


def sample(outcome: Outcome) -> SampleRecord:
    return SampleRecord(
        run_id="r", task_id="t", fingerprint="f", trial=0, outcome=outcome,
        started_at=0.0, finished_at=1.0,
    )  # fmt: skip


def test_the_bar_is_green_while_passing_then_says_what_went_wrong():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="standard", width=160)

    def frame(progress: RunProgress, outcome: Outcome) -> str:
        """The bar as drawn last after `outcome` was recorded."""
        progress.advance(sample(outcome))
        progress._bar.refresh()
        return out.getvalue().rsplit("\r\x1b[2K", 1)[-1]

    with RunProgress(4, {"t": 4}, console) as progress:
        shown = frame(progress, Outcome.passed)
        assert GREEN in shown and "ETA" in shown and "1/4" in shown
        shown = frame(progress, Outcome.failed)
        assert YELLOW in shown and GREEN not in shown
        shown = frame(progress, Outcome.error)
        assert RED in shown
