"""The Tracker contract. A tracker failing must never lose a run: the local store has it all."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from evalrun.models.records import SampleRecord

if TYPE_CHECKING:
    from evalrun.analysis.metrics import Summary
    from evalrun.run.plan import RunPlan


class Tracker(Protocol):
    name: str

    def start(self, plan: RunPlan) -> None: ...

    def record(self, record: SampleRecord) -> None: ...

    def finish(self, summary: Summary) -> None: ...
