"""`evalrun online project=<p>`: judge a live Opik project's conversations, offline-style.

1. Check everything before anything is judged: the settings, the judge (`judge=`, its key), the
   criteria, a price when `budget_usd` is set, and that evaluation traces will not land in the
   live project (`tracker.project` must differ from `project`); then reach Opik.
2. List the project's threads (`level=traces`: traces) updated since `since`; drop those every
   judge already scored with the same judge config (the config hash on their feedback scores);
   keep those `sample_rate` picks - a seeded hash of the thread id, so the same threads are picked
   every time - and the first `limit` of them (newest first). That choice is plan.json.
3. Judge them, `workers` at a time, through opik's thread evaluation with the G-Eval criteria
   (and opik's built-in conversation metrics named in `metrics:`);
   each result is appended to samples.jsonl first, then its scores are sent to Opik as feedback
   on that thread. Judging stops before the judge's spend would pass `budget_usd`.
4. Summarise (mean per judge with its interval, worst threads with reasons), print, gate.

If Opik stops answering, judging stops: one message, exit 2, and everything judged is on disk.
`evalrun online resume=<run-dir>` finishes such a run - or one the budget or Ctrl-C stopped - from
its plan: threads already judged are not judged again, and their scores are sent if Opik does not
have them yet. Exercised against `tests/opik_standin.py` (a stand-in for Opik's REST API) and
`tests/openai_standin.py` (a stand-in judge model), not a live Opik or a paid model.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from rich.console import Console

from evalrun.analysis.gate import print_verdict
from evalrun.config.schema import resolved_dict
from evalrun.console import make_console, styled
from evalrun.errors import ExitCode, UsageError
from evalrun.integrations.opik.conversation import Meter
from evalrun.integrations.opik.criteria import Criterion
from evalrun.integrations.opik.export import OpikUnavailable, connect
from evalrun.integrations.opik.judging import JudgeLoop
from evalrun.integrations.opik.rundir import (
    CriterionInfo,
    OnlineState,
    choose,
    plan_file,
    planned,
    record,
)
from evalrun.integrations.opik.settings import (
    build_criteria,
    destination,
    judge_price,
    read_settings,
)
from evalrun.integrations.opik.source import SOURCES, Judged, Unit, opik_down, sdk_settings
from evalrun.rundir.dirs import is_dir_template
from evalrun.rundir.log import RunLog
from evalrun.rundir.readers import profile_for
from evalrun.rundir.redact import SecretValues, redact
from evalrun.rundir.store import RunLock, RunStore, claim_new_run_dir, remove_if_unused


class OnlineRun:
    """One session of an online run (a resume is another session of the same run)."""

    def __init__(self, cfg: DictConfig, console: Console, overrides: list[str] | None):
        self.s = s = read_settings(cfg)
        self.judge, self.criteria = build_criteria(cfg)
        self.meter = Meter(price=judge_price(cfg, self.judge.model, s.budget_usd))
        self.dest = destination(cfg.tracker, s.project)
        self.profile = profile_for(cfg.profile, cfg.baseline)
        resolved = resolved_dict(cfg)
        secrets = SecretValues.collect(resolved)  # scrubbed from everything written
        self.config = redact(resolved, secrets)
        self.console, self.overrides = console, overrides
        self.err = make_console(stderr=True, soft_wrap=True)
        self.store = RunStore(s.run_dir, secrets)
        criteria = [
            CriterionInfo(name=c.name, model=c.model, config_hash=c.config_hash)
            for c in self.criteria
        ]
        try:
            previous = OnlineState.load(s.run_dir)
        except ValueError as exc:
            raise UsageError(f"{s.run_dir}: not an online run directory ({exc})") from None
        self.state = previous or OnlineState(
            project=s.project, eval_project=self.dest.project, level=s.level, criteria=criteria
        )
        if {c.config_hash for c in self.state.criteria} != {c.config_hash for c in criteria}:
            raise UsageError(
                f"{s.run_dir} holds an online run made with other judges (texts or model); "
                "refusing to mix results. Start a new run directory."
            )
        self.meter.spent_usd = self.state.judge_cost_usd
        self.state.budget_usd, self.state.stopped = s.budget_usd, None
        self.opik_error: BaseException | None = None

    def run(self) -> int:
        with sdk_settings(self.dest):
            client = connect(self.dest)
            self.source = SOURCES[self.s.level](
                client, self.s.project, self.dest.project, self.s.max_turns
            )
            listed = self._list()
            units = self._plan(listed)
            done = {r.task_id: r for r in RunLog.open(self.s.run_dir).records()}
            self._resend(done, {u.id: u for u in listed})
            todo = [u for u in units if u.id not in done]
            if done:
                self.console.print(
                    f"resuming {self.s.run_dir}: {len(done)} judged, {len(todo)} to go"
                )
            loop = JudgeLoop(self.source, self.judge, self.criteria, self.meter, self.s)
            try:
                if self.state.stopped is None:
                    stopped = loop.run(todo, self._collect)
                    self.state.stopped = self.state.stopped or stopped
            finally:
                self.store.close()
                self._save_spend()
            if self.state.stopped != "opik":  # evaluation traces; the engine's span goes by the
                import opik  # SDK's global client

                client.flush(timeout=self.dest.flush_timeout_s)
                opik.flush_tracker(timeout=self.dest.flush_timeout_s)
            client.end(flush=False)
            return self._finish(units)

    def _list(self) -> list[Unit]:
        from opik.rest_api.core.api_error import ApiError

        try:
            return self.source.list_units(self.s.since, self.s.max_scan)
        except Exception as exc:
            if isinstance(exc, ApiError) and exc.status_code == 404:
                raise UsageError(f"project: Opik has no project named {self.s.project!r}") from None
            if not opik_down(exc):
                raise
            if isinstance(exc, ApiError):
                raise OpikUnavailable(f"Opik failed listing {self.s.level}: {exc}") from exc
            raise OpikUnavailable(
                f"Opik stopped answering while listing {self.s.level}: {type(exc).__name__}: {exc}"
            ) from exc

    def _plan(self, listed: list[Unit]) -> list[Unit]:
        """A fresh run chooses its threads and writes the plan; a resumed one reads its plan."""
        try:
            ids = planned(self.s.run_dir)
        except ValueError as exc:
            raise UsageError(f"run_dir: {exc}") from None
        if ids is None:
            units = choose(
                listed,
                self.criteria,
                self.state,
                seed=self.s.seed,
                sample_rate=self.s.sample_rate,
                limit=self.s.limit,
            )
            self.store.create()
            self.store.write_config(self.config)
            if self.overrides is not None:
                self.store.write_overrides(self.overrides)
            self.store.write_plan(plan_file(self.s.run_dir, self.s.project, units, self.s.workers))
            self.state.save(self.store)
            return units
        by_id = {u.id: u for u in listed}
        missing = [i for i in ids if i not in by_id]
        if missing:
            self.err.print(
                styled(
                    "[yellow]{} planned {} are no longer listed and cannot be judged: {}[/]",
                    len(missing),
                    self.s.level,
                    ", ".join(missing[:5]),
                )
            )
        # a thread that got new messages since keeps its planned cell (the plan's fingerprint)
        return [replace(by_id[i], fingerprint=ids[i]) for i in ids if i in by_id]

    def _resend(self, done: dict[str, Any], listed: dict[str, Unit]) -> None:
        """Scores judged by an earlier session that Opik does not have yet: send them now."""
        from opik.evaluation.metrics.score_result import ScoreResult

        for unit_id, rec in done.items():
            unit = listed.get(unit_id)
            wanted = unit.missing(self.criteria) if unit else []
            scores = [
                (c, ScoreResult(c.name, rec.scores[c.name], rec.judge_reasons.get(c.name, "")))
                for c in wanted
                if rec.scores.get(c.name) is not None
            ]
            if unit and scores and not self._send(unit, scores):
                return

    def _send(self, unit: Unit, scores: list[tuple[Criterion, Any]]) -> bool:
        """Send one thread's scores; False when Opik is down (judging stops)."""
        if self.state.stopped == "opik":
            self._mark(unit.id, delivered=False)
            return False
        try:
            self.source.send(unit.id, scores)
        except Exception as exc:
            self._mark(unit.id, delivered=False)
            if opik_down(exc):
                self.state.stopped, self.opik_error = "opik", exc
                return False
            self.err.print(styled("[yellow]opik refused the scores of {}: {}[/]", unit.id, exc))
            return True
        self._mark(unit.id, delivered=True)
        return True

    def _mark(self, unit_id: str, delivered: bool) -> None:
        yes, no = self.state.delivered, self.state.undelivered
        add, remove = (yes, no) if delivered else (no, yes)
        if unit_id in remove:
            remove.remove(unit_id)
        if unit_id not in add:
            add.append(unit_id)

    def _collect(self, unit: Unit, future: Future) -> bool:
        """Record one finished judgement, then send its scores; False: stop judging."""
        error = None
        try:
            judged, started, finished = future.result()
        except Exception as exc:
            if opik_down(exc):
                self.state.stopped, self.opik_error = "opik", exc
                return False
            judged, started, finished = Judged(text="", results=[]), time.time(), time.time()
            error = f"judging failed: {type(exc).__name__}: {exc}"
        rec = record(
            unit,
            judged,
            self.criteria,
            run_id=self.s.run_dir.name,
            threshold=self.s.pass_threshold,
            started=started,
            finished=finished,
        )
        self.store.append(rec.model_copy(update={"reason": error}) if error else rec)
        self.state.judged += 1
        shown = "  ".join(
            f"{n} {v:.2f}" if v is not None else f"{n} failed" for n, v in rec.scores.items()
        )
        self.console.print(
            f"judged {unit.id}  {shown or error or rec.reason}",
            highlight=False,
            soft_wrap=True,
        )
        by_name = {c.name: c for c in self.criteria}
        scores = [
            (by_name[r.name], r)
            for r in judged.results
            if not r.scoring_failed and r.name in by_name
        ]
        return self._send(unit, scores) if scores else True

    def _save_spend(self) -> None:
        self.state.judge_cost_usd = self.meter.spent_usd
        self.state.judge_calls += self.meter.calls
        self.state.unpriced_calls += self.meter.unpriced_calls
        self.meter.calls = self.meter.unpriced_calls = 0
        self.state.save(self.store)

    def _finish(self, units: list[Unit]) -> int:
        from evalrun.integrations.opik.report import print_online

        summary = RunLog.open(self.s.run_dir).summarize()  # the plan's threads, and the state
        self.store.write_summary(summary)
        self.state.save(self.store)
        try:
            from evalrun.report.files import write_reports

            write_reports(self.s.run_dir)
        except Exception as exc:  # a report is a convenience; the run directory is the record
            self.err.print(styled("[yellow]report.html not written: {}[/]", exc))
        print_online(self.console, self.state, summary, self.s.run_dir)
        if self.state.stopped == "opik":
            self.err.print(
                styled("[red]error:[/]"),
                f"Opik stopped answering ({type(self.opik_error).__name__}: "
                f"{self.opik_error}); judging stopped after {self.state.judged} of "
                f"{self.state.selected}. Everything judged is kept in {self.s.run_dir} "
                f"({len(self.state.undelivered)} not yet sent). Finish it with: "
                f"evalrun online resume={self.s.run_dir}",
            )
            return ExitCode.SERVICE_DOWN
        verdict = print_verdict(self.profile, summary, self.console)
        return ExitCode.INTERRUPTED if self.state.stopped == "interrupted" else verdict


def run_online(cfg: DictConfig, console: Console, overrides: list[str] | None = None) -> int:
    """Run `evalrun online` for a composed online config; returns the exit code.

    Like any run, it claims a fresh directory when run_dir is the stamped template, and holds
    the directory's writer lock while it writes (`evalrun.rundir.store`: a second writer is
    refused)."""
    claimed = is_dir_template(cfg, "run_dir")
    if claimed:
        cfg.run_dir = str(claim_new_run_dir(Path(cfg.run_dir)))
    run_dir = Path(cfg.run_dir)
    existed = run_dir.exists() and not claimed
    try:
        with RunLock(run_dir, "online"):
            return OnlineRun(cfg, console, overrides).run()
    finally:
        if not existed:
            remove_if_unused(run_dir)  # refused or failed before it wrote anything
