"""Reading a live project's threads or traces from Opik, judging one, and scoring it - through the
opik SDK's own request paths.

- **threads**: listed with `Opik.search_threads` (POST traces/threads/search); judged by opik's
  `ThreadsEvaluationEngine.evaluate_thread` - the engine `evaluate_threads` runs, one thread at
  a time - which reads the thread's traces (POST traces/search) and logs an evaluation trace;
  scored with PUT traces/threads/feedback-scores.
- **traces**: listed with `Opik.search_traces` (POST traces/search); judged by the same
  conversation metric over the one-turn conversation, in an evaluation trace; scored with PUT
  traces/feedback-scores.

Evaluation traces go to the evaluation project (`tracker.project`), never to the live one; the
only write into the live project is the feedback scores. Scores are sent synchronously through
the SDK's REST client, so a score is known to be delivered when the call returns. Every path was
exercised against `tests/opik_standin.py`, a local stand-in for Opik's REST API, not a real Opik.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalrun.integrations.opik.conversation import Transforms, render
from evalrun.integrations.opik.criteria import Criterion
from evalrun.integrations.opik.link import OpikDestination


def opik_down(exc: BaseException) -> bool:
    """Whether `exc` (or what caused it) means Opik is unreachable or failing."""
    import httpx
    from opik.rest_api.core.api_error import ApiError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, httpx.TransportError | ConnectionError):
            return True
        if isinstance(seen, ApiError) and (seen.status_code or 0) >= 500:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


@contextlib.contextmanager
def sdk_settings(dest: OpikDestination) -> Iterator[None]:
    """`tracker.host` / `tracker.workspace` as the SDK's own variables for the command's length:
    opik's thread evaluation logs its span through the SDK's global client, which reads them."""
    wanted = {"OPIK_URL_OVERRIDE": dest.host, "OPIK_WORKSPACE": dest.workspace}
    saved = {name: os.environ.get(name) for name in wanted}
    os.environ.update({name: value for name, value in wanted.items() if value})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass
class Unit:
    """One thread (or trace) of the live project, as listed."""

    id: str
    fingerprint: str  # changes when the thread gets new messages
    tags: list[str]
    scores: list[dict[str, Any]]  # its feedback scores as Opik returns them
    cost_usd: float | None = None
    usage: dict[str, int] = field(default_factory=dict)
    raw: Any = None

    def missing(self, criteria: Sequence[Criterion]) -> list[Criterion]:
        """The criteria that have not scored this unit with their current config."""
        return [c for c in criteria if not any(c.scored_by_me(s) for s in self.scores)]


@dataclass
class Judged:
    """What judging one unit produced: the text the judge saw and one result per criterion."""

    text: str
    results: list[Any]  # opik ScoreResult


def _fingerprint(*parts: Any) -> str:
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:16]


def _units(found: Any, fingerprint: Callable[[Any], str]) -> list[Unit]:
    """Listed threads or traces as units (one without an id is skipped)."""
    return [
        Unit(
            id=str(t.id),
            fingerprint=fingerprint(t),
            tags=list(t.tags or []),
            scores=[s.model_dump(mode="json") for s in t.feedback_scores or []],
            cost_usd=t.total_estimated_cost,
            usage=dict(t.usage or {}),
            raw=t,
        )
        for t in found
        if t.id
    ]


def _feedback(
    item_type: Any, id_field: str, unit_id: str, project: str, scored: list[tuple[Criterion, Any]]
) -> list[Any]:
    """One feedback-score batch item (of the SDK's `item_type`) per scored criterion."""
    return [
        item_type(
            **{id_field: unit_id},
            project_name=project,
            name=c.name,
            value=float(r.value),
            reason=c.tagged_reason(str(r.reason or "")),
            category_name=c.marker,
            source="sdk",
        )
        for c, r in scored
    ]


class ThreadSource:
    level = "threads"

    def __init__(self, client: Any, project: str, eval_project: str, max_turns: int):
        from opik.api_objects.threads.threads_client import ThreadsClient
        from opik.evaluation.threads.evaluation_engine import ThreadsEvaluationEngine

        self.client, self.project, self.eval_project = client, project, eval_project
        self.max_turns = max_turns
        self.threads = ThreadsClient(client)
        self.engine = ThreadsEvaluationEngine(
            client=self.threads, project_name=project, number_of_workers=1, verbose=0
        )

    def list_units(self, since: str | None, max_scan: int) -> list[Unit]:
        found = self.threads.search_threads(
            project_name=self.project,
            filter_string=f'last_updated_at >= "{since}"' if since else None,
            max_results=max_scan,
            truncate=True,
        )
        return _units(found, lambda t: _fingerprint(t.id, t.number_of_messages, t.last_updated_at))

    def judge(self, unit: Unit, metrics: list[Any], transforms: Transforms) -> Judged:
        for metric in metrics:
            metric.forget()
        result = self.engine.evaluate_thread(
            thread=unit.raw,
            eval_project_name=self.eval_project,
            metrics=metrics,
            trace_input_transform=transforms[0],
            trace_output_transform=transforms[1],
            max_traces_per_thread=self.max_turns,
        )
        seen = [m.last_text() for m in metrics if m.last_text() is not None]
        return Judged(text=seen[0] if seen else "", results=list(result.scores))

    def send(self, unit_id: str, scored: list[tuple[Criterion, Any]]) -> None:
        from opik.rest_api.types import FeedbackScoreBatchItemThread

        self.client.rest_client.traces.score_batch_of_threads(
            scores=_feedback(
                FeedbackScoreBatchItemThread, "thread_id", unit_id, self.project, scored
            )
        )


class TraceSource:
    level = "traces"

    def __init__(self, client: Any, project: str, eval_project: str, max_turns: int):
        self.client, self.project, self.eval_project = client, project, eval_project

    def list_units(self, since: str | None, max_scan: int) -> list[Unit]:
        found = self.client.search_traces(
            project_name=self.project,
            filter_string=f'start_time >= "{since}"' if since else None,
            max_results=max_scan,
            truncate=True,
        )
        return _units(found, lambda t: _fingerprint(t.id, t.last_updated_at))

    def judge(self, unit: Unit, metrics: list[Any], transforms: Transforms) -> Judged:
        trace = unit.raw
        conversation = [
            {"role": role, "content": text}
            for role, text in (
                ("user", transforms[0](trace.input)),
                ("assistant", transforms[1](trace.output)),
            )
            if text is not None
        ]
        if not any(t["role"] == "assistant" for t in conversation):
            return Judged(text=render(conversation), results=[])
        results = [m.score(conversation) for m in metrics]
        self.client.trace(
            name="evaluation_task",
            project_name=self.eval_project,
            input={"conversation": conversation, "trace_id": unit.id, "project": self.project},
            output={"evaluation_results": [r.__dict__ for r in results]},
            tags=["evalrun-online"],
        )
        return Judged(text=render(conversation), results=results)

    def send(self, unit_id: str, scored: list[tuple[Criterion, Any]]) -> None:
        from opik.rest_api.types import FeedbackScoreBatchItem

        self.client.rest_client.traces.score_batch_of_traces(
            scores=_feedback(FeedbackScoreBatchItem, "id", unit_id, self.project, scored)
        )


class Source(Protocol):
    """Where an online run's units come from and where their scores go: Opik threads or traces."""

    level: str

    def list_units(self, since: str | None, max_scan: int) -> list[Unit]:
        """The project's units, newest first (at most `max_scan` looked at)."""
        ...

    def judge(self, unit: Unit, metrics: list[Any], transforms: Transforms) -> Judged:
        """Score `unit` with `metrics` (G-Eval criteria), nothing sent yet."""
        ...

    def send(self, unit_id: str, scored: list[tuple[Criterion, Any]]) -> None:
        """Write the scores back to Opik as the unit's feedback."""
        ...


SOURCES: dict[str, Callable[[Any, str, str, int], Source]] = {
    "threads": ThreadSource,
    "traces": TraceSource,
}
