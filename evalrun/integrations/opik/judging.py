"""Judging threads `workers` at a time, inside a budget, with the same G-Eval as offline (and
opik's built-in conversation metrics named in `metrics:`, on the same judge model).

`JudgeLoop.run(todo, on_done)` submits one job per thread to a thread pool, hands each finished
job to `on_done` in the main thread (which records and sends it), and stops submitting when:

- the budget would be passed: before each submission, the spend so far plus, for this and every
  judgement still in flight, the average cost of a thread judged in this session, must stay
  within `budget_usd` (before any thread is judged the average is unknown, so at most `workers`
  judgements start on an unknown cost - the cap can be passed by at most what those cost);
- `on_done` says stop (Opik went down);
- Ctrl-C: judgements in flight are dropped (nothing of them is recorded), the rest is kept.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from evalrun.integrations.opik.conversation import (
    Meter,
    builtin_metric,
    conversation_metric,
    metered_model,
    transforms,
)
from evalrun.integrations.opik.criteria import Criterion
from evalrun.integrations.opik.settings import OnlineSettings
from evalrun.integrations.opik.source import Judged, Unit

Outcome = tuple[Judged, float, float]  # what the judge saw and said, started, finished


class JudgeLoop:
    def __init__(
        self, source: Any, judge: Any, criteria: list[Criterion], meter: Meter, s: OnlineSettings
    ):
        self.source, self.criteria, self.meter, self.s = source, criteria, meter, s
        model = metered_model(judge, meter)
        attempts, backoff = s.judge_attempts, s.retry_backoff_s
        self.metrics = {
            c.name: (
                conversation_metric(c, judge.geval(c.spec, model), attempts, backoff)
                if c.spec is not None
                else builtin_metric(c, model, attempts, backoff)
            )
            for c in criteria
        }
        self.turns = transforms(s.input_key, s.output_key)

    def judge(self, unit: Unit) -> Outcome:
        """Judge one thread with the criteria that have not scored it yet (a worker thread)."""
        started = time.time()
        metrics = [self.metrics[c.name] for c in unit.missing(self.criteria)]
        judged = self.source.judge(unit, metrics, self.turns)
        return judged, started, time.time()

    def over_budget(self, in_flight: int, judged: int, spent_before: float) -> bool:
        budget = self.s.budget_usd
        if budget is None:
            return False
        spent = self.meter.spent_usd
        average = (spent - spent_before) / judged if judged else 0.0
        return spent >= budget or spent + (in_flight + 1) * average > budget

    def run(self, todo: list[Unit], on_done: Callable[[Unit, Future], bool]) -> str | None:
        """Judge `todo`; returns why it stopped early (budget, stopped, interrupted) or None."""
        pending: deque[Unit] = deque(todo)
        running: dict[Future, Unit] = {}
        judged, spent_before, stopped = 0, self.meter.spent_usd, None
        pool = ThreadPoolExecutor(max_workers=self.s.workers, thread_name_prefix="online-judge")
        try:
            while pending or running:
                while pending and len(running) < self.s.workers and stopped is None:
                    if self.over_budget(len(running), judged, spent_before):
                        stopped = "budget"
                        break
                    unit = pending.popleft()
                    running[pool.submit(self.judge, unit)] = unit
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    judged += 1
                    if not on_done(running.pop(future), future) and stopped is None:
                        stopped = "stopped"
        except KeyboardInterrupt:
            stopped = "interrupted"
        finally:
            pool.shutdown(wait=stopped != "interrupted", cancel_futures=True)
        return stopped
