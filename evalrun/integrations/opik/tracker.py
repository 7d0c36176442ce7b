"""`tracker=opik`: each run becomes an Opik experiment, each sample a trace, as the run goes.

The local run directory is written as always; Opik is a second sink and never a reason for a run
to fail. If Opik is missing, misconfigured or unreachable at the start, or stops answering later,
the tracker says so once on stderr, stops sending, and the run completes with everything kept
locally; `evalrun push <run-dir>` sends it later (see `evalrun.integrations.opik.push`). What is
sent and how duplicates are avoided is described in `evalrun.integrations.opik.export`. A probes
run whose probes carry `assertions:` also runs them as an Opik test suite once the experiment is
complete (`evalrun.integrations.opik.suite`); a failure there is reported once and leaves the run
as it was.

opik is imported only when a run starts with this tracker. Exercised against a local stand-in
for Opik's REST API (`tests/opik_standin.py`), not a real Opik server.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import TYPE_CHECKING

from evalrun.config.schema import OpikTrackerConf
from evalrun.console import make_console, styled
from evalrun.errors import UsageError
from evalrun.extras import require
from evalrun.integrations.opik.export import ExperimentExport, connect
from evalrun.integrations.opik.link import OpikDestination, OpikLink, new_link, task_item
from evalrun.models.records import SampleRecord
from evalrun.probes.format import ProbeFormat

if TYPE_CHECKING:
    from pathlib import Path

    from evalrun.models.summary import Summary
    from evalrun.run.plan import RunPlan


class OpikTracker:
    name = "opik"

    def __init__(
        self,
        project: str = OpikTrackerConf.project,  # defaults: their home is the tracker schema
        dataset: str | None = None,
        host: str | None = None,
        workspace: str | None = None,
        flush_timeout_s: int = OpikTrackerConf.flush_timeout_s,
        probe_timeout_s: float = OpikTrackerConf.probe_timeout_s,
    ):
        # A missing SDK is a usage mistake, stopped before the run; an unreachable server is not.
        require("opik", "opik", "tracker=opik")
        self.destination = OpikDestination(
            project=project,
            dataset=dataset or None,
            host=host or None,
            workspace=workspace or None,
            flush_timeout_s=flush_timeout_s,
            probe_timeout_s=probe_timeout_s,
        )
        self.console = make_console(stderr=True, soft_wrap=True)
        self._export: ExperimentExport | None = None
        self._run_dir: Path | None = None
        self._assertions: dict[str, tuple[str, ...]] = {}  # probe id -> its assertions
        self._judge: object = None
        self._records: list[SampleRecord] = []

    def start(self, plan: RunPlan) -> None:
        self._run_dir = plan.run_dir
        self._judge = plan.judge
        self._assertions = {
            t.id: t.format.spec.assertions
            for t in plan.tasks
            if isinstance(t.format, ProbeFormat) and t.format.spec.assertions
        }
        tasks = {t.id: task_item(t) for t in plan.tasks}
        try:
            link = OpikLink.load(plan.run_dir) or new_link(
                run_dir=plan.run_dir,
                config=plan.config,
                tasks_dir=plan.tasks_dir,
                tasks=tasks.values(),
                cells=len(plan.cells),
                dest=self.destination,
                recorded_at="run",
                source=plan.tasks_source,
            )
            client = connect(replace(self.destination, project=link.project))
            export = ExperimentExport(client, link, tasks)
            export.open()
        except Exception as exc:
            self._give_up(_describe(exc))
            return
        self._export = export

    def record(self, record: SampleRecord) -> None:
        if self._export is None:
            return
        if record.task_id in self._assertions:
            self._records.append(record)
        try:
            self._export.send(record)
        except Exception as exc:
            self._give_up(_describe(exc))

    def finish(self, summary: Summary) -> None:
        export = self._export
        if export is None:
            return
        try:
            problem = export.finish(summary, self.destination.flush_timeout_s)
        except Exception as exc:
            problem = _describe(exc)
        if problem:
            self._give_up(problem)
            return
        link = export.link
        skipped = f", {export.counts.skipped} already there" if export.counts.skipped else ""
        self.console.print(
            f"opik: experiment {link.experiment_name} in project {link.project} "
            f"({export.counts.sent} samples sent{skipped}; dataset {link.dataset})",
            highlight=False,
        )
        if self._records:
            self._run_assertions(link)

    def _run_assertions(self, link: OpikLink) -> None:
        """The probes' assertions as an Opik test suite; a problem is reported once, no more."""
        from evalrun.integrations.opik.suite import JudgeRoute, run_suite, suite_items
        from evalrun.report.probes import write_assertion_results

        route = JudgeRoute.of(self._judge)
        if route is None:
            self.console.print(
                styled("[yellow]opik:[/]"),
                "probe assertions not run: no judge model "
                "(choose one with judge=default or judge=<option>)",
            )
            return
        items = suite_items(self._records, self._assertions)
        if not items:
            return
        try:
            client = connect(replace(self.destination, project=link.project))
            try:
                results = run_suite(client, link.project, link.experiment_name, items, route)
            finally:
                with contextlib.suppress(Exception):
                    client.end(flush=True)
            assert self._run_dir is not None
            write_assertion_results(self._run_dir, results)
        except Exception as exc:
            self.console.print(
                styled("[yellow]opik:[/]"),
                f"probe assertions not run as a test suite: {_describe(exc)}",
            )
            return
        self.console.print(
            f"opik: test suite {results['suite']} ({len(items)} samples judged by {route.model})",
            highlight=False,
        )

    def _give_up(self, reason: str) -> None:
        """Report once, stop sending; the run carries on locally."""
        export, self._export = self._export, None
        if export is not None:
            with contextlib.suppress(Exception):  # already failing; nothing more to report
                export.client.end(flush=False)
        self.console.print(
            styled("[yellow]opik:[/]"),
            f"{reason}\n"
            f"  Nothing is lost: the run is kept in full in {self._run_dir}; "
            f"send it to Opik later with: evalrun push {self._run_dir}",
        )


def _describe(exc: Exception) -> str:
    if isinstance(exc, UsageError):  # OpikUnavailable, an unreadable opik.json
        return str(exc)
    first_line = next(iter(str(exc).strip().splitlines()), "")
    return f"an Opik request failed: {type(exc).__name__}: {first_line}"[:500]
