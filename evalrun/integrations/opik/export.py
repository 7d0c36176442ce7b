"""Send a run to Opik: the suite's dataset, one experiment per run, one trace per sample.

Shared by `tracker=opik` (live, as samples finish) and `evalrun push` (later, from the run
directory), so both produce the same objects with the same ids:

- **Dataset** `evalrun-<suite>-v1` (or `tracker.dataset`), one item per task (task id, prompt,
  difficulty, tags, fingerprint). Item ids are derived from the task id, and the SDK skips items
  whose content is already there, so upserting twice adds nothing; a changed task (new
  fingerprint) updates its item in place.
- **Experiment** named after the run, its id allocated once and kept in `<run-dir>/opik.json`
  (`evalrun.integrations.opik.link`); `experiment_config` is the redacted resolved config plus
  `reproduction`; when the run's samples are sent, its state is added (`run_state`).
- **Traces** with deterministic ids (`evalrun.integrations.opik.traces.trace_id`). Before sending,
  the experiment's existing items are listed and samples already linked to it are skipped, so
  pushing a run twice - or resuming one - sends nothing twice.

opik is imported only inside `connect`. No Opik server is reachable where evalrun is developed:
every path here was exercised against `tests/opik_standin.py`, a local HTTP stand-in for the
subset of Opik's REST API that the real opik SDK calls.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalrun.errors import UsageError
from evalrun.extras import install_hint
from evalrun.integrations.opik.link import OpikDestination, OpikLink, TaskItem
from evalrun.integrations.opik.traces import (
    dataset_item_id,
    experiment_scores,
    span_kwargs,
    trace_id,
    trace_kwargs,
)
from evalrun.models.records import SampleRecord
from evalrun.models.summary import Summary
from evalrun.retry import retrying

if TYPE_CHECKING:
    import opik

EXPERIMENT_ITEMS_PAGE = 2_000


class OpikUnavailable(UsageError):
    """Opik cannot be used: the SDK is missing, misconfigured, or the server is unreachable."""


def quiet_sdk_logging() -> None:
    """The SDK logs every failed background request; evalrun reports a failure once instead.
    An explicit OPIK_CONSOLE_LOGGING_LEVEL is left alone (for debugging the SDK itself)."""
    if "OPIK_CONSOLE_LOGGING_LEVEL" not in os.environ:
        logging.getLogger("opik").setLevel(logging.CRITICAL)


def connect(dest: OpikDestination) -> opik.Opik:
    """An Opik client after a quick reachability probe; raises `OpikUnavailable` saying why."""
    try:
        import httpx
        import opik
        from opik.config import OpikConfig
    except ImportError as exc:
        raise OpikUnavailable(
            f"tracker=opik needs the opik SDK ({exc}); install it with: {install_hint('opik')}"
        ) from exc
    quiet_sdk_logging()
    settings: dict[str, Any] = {"url_override": dest.host, "workspace": dest.workspace}
    config = OpikConfig(**{k: v for k, v in settings.items() if v})
    misconfigured, message = config.get_misconfiguration_detection_results()
    if misconfigured:
        hint = (message or "").strip().splitlines()[0] if message else "misconfigured"
        raise OpikUnavailable(
            f"Opik is not configured: {hint} (set OPIK_URL_OVERRIDE for a self-hosted server, "
            "or OPIK_API_KEY and OPIK_WORKSPACE for Opik Cloud; or tracker.host=<url>)"
        )
    url = config.url_override
    ping = url.rstrip("/") + "/is-alive/ping"
    try:
        response = httpx.get(ping, timeout=dest.probe_timeout_s)
    except httpx.HTTPError as exc:
        raise OpikUnavailable(f"Opik at {url} is unreachable: {type(exc).__name__}: {exc}") from exc
    if response.status_code != 200:
        raise OpikUnavailable(f"Opik at {url} answered {response.status_code} to {ping}")
    return opik.Opik(
        project_name=dest.project,
        host=dest.host,
        workspace=dest.workspace,
        _show_misconfiguration_message=False,
    )


def upsert_dataset(client: opik.Opik, name: str, project: str, tasks: Iterable[TaskItem]) -> int:
    """Create the dataset if needed and upsert one item per task; returns the number of tasks.
    Unchanged items are not sent again (the SDK compares content hashes with what is stored)."""
    items = [{"id": dataset_item_id(project, name, t.task_id), **t.data()} for t in tasks]
    dataset = client.get_or_create_dataset(
        name, description="evalrun tasks: one item per task folder", project_name=project
    )
    dataset.insert(items, num_threads=1)
    return len(items)


@dataclass
class ExportCounts:
    sent: int = 0
    skipped: int = 0  # already in the experiment


class ExperimentExport:
    """One run's experiment. `open()` makes the dataset and experiment exist and learns which
    samples are already there; `send()` queues one sample (the SDK sends in the background);
    `finish()` attaches the suite scores and flushes, returning None or what went wrong."""

    def __init__(self, client: opik.Opik, link: OpikLink, tasks: Mapping[str, TaskItem]):
        self.client = client
        self.link = link
        self.tasks = dict(tasks)
        self.counts = ExportCounts()
        self._experiment: Any = None
        self._linked_traces: set[str] = set()
        self._sent: set[str] = set()  # trace ids queued in this session

    def open(self) -> None:
        from opik.exceptions import ExperimentNotFound

        link = self.link
        upsert_dataset(self.client, link.dataset, link.project, self.tasks.values())
        try:
            self._experiment = self.client.get_experiment_by_id(link.experiment_id)
            self._linked_traces = self._existing_trace_ids()
        except ExperimentNotFound:
            self._experiment = self.client.create_experiment(
                dataset_name=link.dataset,
                name=link.experiment_name,
                experiment_config=link.experiment_config,
                tags=["evalrun"],
                project_name=link.project,
                experiment_id=link.experiment_id,
            )

    def _existing_trace_ids(self) -> set[str]:
        """Trace ids already linked to this experiment, read from the experiment-items stream."""
        found: set[str] = set()
        last: str | None = None
        while True:
            chunks = self.client.rest_client.experiments.stream_experiment_items(
                experiment_name=self.link.experiment_name,
                project_name=self.link.project,
                limit=EXPERIMENT_ITEMS_PAGE,
                last_retrieved_id=last,
            )
            lines = b"".join(chunks).splitlines()
            rows = [json.loads(line) for line in lines if line.strip()]
            for row in rows:
                if row.get("experiment_id") == self.link.experiment_id and row.get("trace_id"):
                    found.add(row["trace_id"])
            if len(rows) < EXPERIMENT_ITEMS_PAGE or not rows[-1].get("id"):
                return found
            last = rows[-1]["id"]

    def send(self, record: SampleRecord) -> bool:
        """Queue one sample's trace, spans, scores and experiment item; False if already there."""
        from opik.api_objects.experiment.experiment_item import ExperimentItemReferences

        tid = trace_id(self.link.experiment_id, record)
        if tid in self._linked_traces:
            self.counts.skipped += 1
            return False
        task = self.tasks.get(record.task_id)
        trace = self.client.trace(
            **trace_kwargs(
                record,
                trace_id=tid,
                prompt=task.prompt if task else None,
                tags=list(task.tags) if task else [],
                difficulty=task.difficulty if task else "unknown",
            ),
            project_name=self.link.project,
        )
        for span in span_kwargs(record, tid):
            trace.span(**span)
        item_id = dataset_item_id(self.link.project, self.link.dataset, record.task_id)
        self._experiment.insert(
            [
                ExperimentItemReferences(
                    dataset_item_id=item_id, trace_id=tid, project_name=self.link.project
                )
            ]
        )
        self._linked_traces.add(tid)
        self._sent.add(tid)
        self.counts.sent += 1
        return True

    def finish(self, summary: Summary | None, timeout_s: int) -> str | None:
        """Flush, check that every sample sent is linked to the experiment (read back from the
        server: the SDK counts a sample held for a later retry as delivered), attach the suite
        scores, release the client. Returns None when all reached Opik, else what did not."""
        try:
            if not self.client.flush(timeout=timeout_s):
                result = self.client.last_flush_result
                dropped = getattr(result, "dropped_messages", 0) if result else 0
                lost = f" ({dropped} message(s) dropped)" if dropped else ""
                return f"not everything reached Opik within {timeout_s}s{lost}"
            missing = self._unconfirmed()
            if missing:
                return f"{missing} of {self.counts.sent} samples sent did not reach Opik"
            if summary is not None:
                self._log_experiment_scores(summary)
            return None
        finally:
            self.client.end(flush=False)

    def _unconfirmed(self) -> int:
        """How many samples sent in this session the experiment does not list yet (re-read a
        few times, for a server that makes writes visible with a short delay)."""
        reread = retrying(3, waits=(1.0, 2.0), on_result=bool)
        return len(reread(lambda: self._sent - self._existing_trace_ids()))

    def _log_experiment_scores(self, summary: Summary) -> None:
        """What Experiment.log_experiment_scores sends, without importing opik.evaluation
        (whose metrics pull in litellm: seconds of import time) - plus the run's state in the
        experiment's metadata (`run_state`: complete, or partial N/M with the missing cells)
        and its status (`completed`, or `cancelled` for a partial run)."""
        from opik.rest_api.types import ExperimentScore

        values = experiment_scores(summary)
        update: dict[str, Any] = {}
        if values:
            scores = [ExperimentScore(name=n, value=v) for n, v in values.items()]
            update["experiment_scores"] = scores
        if summary.state is not None:
            state = summary.state.model_dump(mode="json")
            update["metadata"] = {**self.link.experiment_config, "run_state": state}
            update["status"] = "completed" if summary.state.complete else "cancelled"
        if update:
            self.client.rest_client.experiments.update_experiment(
                id=self.link.experiment_id, **update
            )
