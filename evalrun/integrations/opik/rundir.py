"""An online evaluation's run directory: the same files as any run, plus `online.json`.

Written through `evalrun.rundir.store.RunStore` (scrubbed of secret values, under the directory's
writer lock, with the run's state in summary.json), so `evalrun gate`, `diff`, `ls`, `show` and
`report` read it like any run:

```
config.yaml     the resolved online config, secrets redacted
overrides.yaml  the command-line overrides (replayed by `evalrun online resume=<run-dir>`)
plan.json       kind "online": the threads chosen to judge, one "task" each (trials 1)
samples.jsonl   one SampleRecord per judged thread: scores and reasons per judge, the
                conversation the judge saw as the agent output, the verdict (pass when every
                judge scored at least pass_threshold; error when a judgement failed)
summary.json    the usual Summary; `judges` holds each judge's mean, interval and worst threads
online.json     project, judge config hashes, selection counts, judge spend, why it stopped,
                which threads' scores reached Opik
```
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, Field

from evalrun.integrations.opik.criteria import Criterion
from evalrun.integrations.opik.source import Judged, Unit
from evalrun.models.plan import PlanFile, PlannedTask, RunKind
from evalrun.models.records import AgentResult, Outcome, Phases, SampleRecord, Usage
from evalrun.rundir.log import PLAN_SCHEMA, RunLog, is_run_dir
from evalrun.rundir.store import RunStore

ONLINE_FILE = "online.json"


class CriterionInfo(BaseModel):
    name: str
    model: str
    config_hash: str


class OnlineState(BaseModel):
    """`online.json`: what an online run chose, spent and delivered."""

    project: str
    eval_project: str
    level: str
    criteria: list[CriterionInfo]
    listed: int = 0  # threads (traces) listed from the project
    not_sampled: int = 0
    already_scored: int = 0  # skipped: every judge had scored them with this config
    selected: int = 0
    judged: int = 0
    judge_cost_usd: float = 0.0
    judge_calls: int = 0
    unpriced_calls: int = 0
    budget_usd: float | None = None
    stopped: str | None = None  # budget | opik | interrupted
    delivered: list[str] = Field(default_factory=list)
    undelivered: list[str] = Field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.stopped is None and self.judged == self.selected and not self.undelivered

    def save(self, store: RunStore) -> None:
        store.write_json(ONLINE_FILE, {**self.model_dump(mode="json"), "complete": self.complete})

    @classmethod
    def load(cls, run_dir: Path) -> OnlineState | None:
        path = Path(run_dir) / ONLINE_FILE
        if not path.is_file():
            return None
        return cls.model_validate_json(path.read_text(encoding="utf-8"))


def sampled(seed: int, unit_id: str, rate: float) -> bool:
    """Whether `sample_rate` picks this thread: a hash of seed and id, the same on every run."""
    digest = hashlib.sha256(f"{seed}:{unit_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def choose(
    listed: list[Unit],
    criteria: list[Criterion],
    state: OnlineState,
    *,
    seed: int,
    sample_rate: float,
    limit: int,
) -> list[Unit]:
    """The threads to judge, in listing order (newest first): those some judge has not scored
    with its current config, that the seeded sample picks, at most `limit`. Counts in `state`."""
    chosen: list[Unit] = []
    for unit in listed:
        if not unit.missing(criteria):
            state.already_scored += 1
        elif not sampled(seed, unit.id, sample_rate):
            state.not_sampled += 1
        elif len(chosen) < limit:
            chosen.append(unit)
    state.listed, state.selected = len(listed), len(chosen)
    return chosen


def plan_file(run_dir: Path, project: str, units: list[Unit], workers: int) -> PlanFile:
    """plan.json in the shape every run-directory reader knows (threads as tasks, one trial)."""
    return PlanFile(
        schema_version=PLAN_SCHEMA,
        kind=RunKind.online,
        run_id=run_dir.name,
        run_dir=str(run_dir),
        tasks_dir=f"opik:{project}",
        trials=1,
        concurrency=workers,
        sandbox="none",
        agent=f"opik:{project}",
        tasks=[
            PlannedTask(id=u.id, fingerprint=u.fingerprint, difficulty="unknown", tags=u.tags)
            for u in units
        ],
        cells=len(units),
    )


def planned(run_dir: Path) -> dict[str, str] | None:
    """Thread id -> fingerprint, as an earlier session of this online run chose them (None: no
    plan yet). `ValueError` when the directory holds another kind of run."""
    if not is_run_dir(Path(run_dir)):
        return None
    run = RunLog.open(run_dir)
    if run.kind is not RunKind.online:
        raise ValueError(f"{run_dir} holds a {run.kind.value} run, not an online run")
    return {t.id: t.fingerprint for t in run.plan.tasks}


def verdict(
    judged: Judged, criteria: list[Criterion], threshold: float
) -> tuple[Outcome, str | None]:
    """pass: every judge scored at least `threshold` (a lower-is-better metric such as
    user_frustration_score: at most 1 - `threshold`); error: nothing judged or a judge failed."""
    by_name = {r.name: r for r in judged.results}
    lower = {c.name for c in criteria if not c.higher_is_better}
    if not judged.results:
        return Outcome.error, "nothing to judge: no assistant message found in the conversation"
    failed = [c.name for c in criteria if c.name in by_name and by_name[c.name].scoring_failed]
    if failed:
        name = failed[0]
        return Outcome.error, f"judge {name} gave no score: {by_name[name].reason}"
    goodness = {r.name: 1.0 - r.value if r.name in lower else r.value for r in judged.results}
    low = [r for r in judged.results if float(goodness[r.name]) < threshold]
    if not low:
        return Outcome.passed, None
    worst = min(low, key=lambda r: float(goodness[r.name]))
    bound = f"> {1 - threshold:g}" if worst.name in lower else f"< {threshold:g}"
    return Outcome.failed, f"{worst.name} {worst.value:.2f} {bound}: {worst.reason}"[:1000]


def record(
    unit: Unit,
    judged: Judged,
    criteria: list[Criterion],
    *,
    run_id: str,
    threshold: float,
    started: float,
    finished: float,
) -> SampleRecord:
    outcome, reason = verdict(judged, criteria, threshold)
    usage = Usage(
        input_tokens=int(unit.usage.get("prompt_tokens", 0) or 0),
        output_tokens=int(unit.usage.get("completion_tokens", 0) or 0),
        cost_usd=unit.cost_usd,
        cost_source="Opik's estimate for the conversation" if unit.cost_usd is not None else None,
    )
    return SampleRecord(
        run_id=run_id,
        task_id=unit.id,
        fingerprint=unit.fingerprint,
        trial=0,
        outcome=outcome,
        reason=reason,
        phases=Phases(verify=finished - started),
        agent=AgentResult(output=judged.text, usage=usage),
        started_at=started,
        finished_at=finished,
        scores={r.name: (None if r.scoring_failed else float(r.value)) for r in judged.results},
        judge_reasons={r.name: str(r.reason or "") for r in judged.results},
    )
