"""`tracker=local`: nothing beyond the run directory, which every run writes anyway."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalrun.models.records import SampleRecord

if TYPE_CHECKING:
    from evalrun.analysis.metrics import Summary
    from evalrun.run.plan import RunPlan


class LocalTracker:
    name = "local"

    def start(self, plan: RunPlan) -> None:
        return None

    def record(self, record: SampleRecord) -> None:
        return None

    def finish(self, summary: Summary) -> None:
        return None
