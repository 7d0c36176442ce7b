"""A run directory, read: the one typed model every reader goes through.

`RunLog.open(path)` reads what is small at once - config.yaml, overrides.yaml, plan.json and
summary.json when it exists - and streams samples.jsonl only when asked (`records()`, or
`digests()`, which skips trajectories and outputs and is several times faster on a large run).
Reports, `ls`, `show`, `diff`, `gate`, `power`, `push`, the sweep summary and `evalrun online`
all read a run this way; `evalrun.rundir.store` is the one writer beside it.

```
plan.json      PlanFile: kind (tasks | probes | online), run id, tasks with fingerprints, trials
config.yaml    the resolved config (redacted), as a mapping and as its text
overrides.yaml the command-line overrides (a resume replays them)
samples.jsonl  SampleRecord lines; a torn last line (a crash mid-write) is skipped
samples/<task>/<trial>/workspace.tar.gz   a sample's final workspace (`final_workspace`)
summary.json   Summary (docs/summary-schema.md); recomputed from the records when missing or
               older than samples.jsonl, always with the state as the files tell it now and
               the skipped tasks as plan.json lists them
```

Versions. plan.json and summary.json carry `schema_version`. A version above the one this
evalrun reads is refused with a `UsageError` that says to upgrade, never misread.

Every mistake is a `UsageError` naming the file and what was expected: a folder that is not a
run, a file that is not readable JSON / YAML or does not match its schema.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError

from evalrun.analysis.metrics import summarize
from evalrun.config import yamlio
from evalrun.errors import UsageError
from evalrun.models.plan import PlanFile, RunKind
from evalrun.models.records import (
    CellKey,
    RunState,
    SampleDigest,
    SampleRecord,
    run_state,
)
from evalrun.models.summary import Summary
from evalrun.rundir.redact import override_name, redacted_keys, redacted_replay_message
from evalrun.rundir.store import (
    CONFIG_FILE,
    OVERRIDES_FILE,
    PLAN_FILE,
    SAMPLES_FILE,
    SUMMARY_FILE,
    final_workspace_path,
)

PLAN_SCHEMA = 1  # the plan.json version this evalrun writes and reads up to
SUMMARY_SCHEMA = 1  # likewise summary.json (docs/summary-schema.md)


R = TypeVar("R", bound=SampleRecord | SampleDigest)


class _Started(BaseModel):
    """A record line parsed only for when its sample started (`RunLog.started_at`)."""

    started_at: float


M = TypeVar("M", bound=BaseModel)


class RunLog(BaseModel):
    """One run directory, read (see the module docstring). Build it with `RunLog.open`."""

    model_config = ConfigDict(frozen=True)

    run_dir: Path
    plan: PlanFile
    config: dict[str, Any]
    config_text: str
    overrides: list[str]
    saved_summary: Summary | None  # summary.json as written; None while the run has not ended
    _summary: Summary | None = PrivateAttr(default=None)

    @classmethod
    def open(cls, path: str | Path, *, ended: bool = False) -> RunLog:
        """Read the run directory at `path`. `ended`: it must hold summary.json (gate, diff and
        a baseline compare runs that ended). `UsageError` naming the folder or file otherwise."""
        run_dir = locate_run(path)
        needed = [CONFIG_FILE, PLAN_FILE, *([SUMMARY_FILE] if ended else [])]
        missing = [name for name in needed if not (run_dir / name).is_file()]
        if missing:
            what = "the directory of a run that ended" if ended else "a run directory"
            raise UsageError(
                f"{run_dir} is not {what}: {_listed(missing)} not found "
                "(config.yaml and plan.json are written when a run starts, summary.json when "
                "it ends)"
            )
        plan = _read_model(run_dir / PLAN_FILE, PlanFile, PLAN_SCHEMA)
        config_text = _read_text(run_dir / CONFIG_FILE)
        config = _read_yaml(run_dir / CONFIG_FILE, config_text)
        overrides_path = run_dir / OVERRIDES_FILE
        overrides = _read_yaml(overrides_path) if overrides_path.is_file() else None
        summary_path = run_dir / SUMMARY_FILE
        saved = (
            _read_model(summary_path, Summary, SUMMARY_SCHEMA) if summary_path.is_file() else None
        )
        return cls(
            run_dir=run_dir,
            plan=plan,
            config=config if isinstance(config, dict) else {},
            config_text=config_text,
            overrides=[str(o) for o in overrides] if isinstance(overrides, list) else [],
            saved_summary=saved,
        )

    # --- what the run is ----------------------------------------------------------------------
    @property
    def kind(self) -> RunKind:
        return self.plan.kind

    @property
    def ended(self) -> bool:
        """Whether the run wrote its summary.json (it finished, or stopped and said so)."""
        return self.saved_summary is not None

    @property
    def agent_option(self) -> str:
        """The agent as it was chosen: its config option (`my_agent`), else its kind."""
        return self.plan.choices.get("agent", self.plan.agent)

    @property
    def model(self) -> str | None:
        """The model the agent called - its own `model`, else its provider's - or None for an
        agent that calls none (oracle, noop, a command agent)."""
        agent_cfg = self.config.get("agent")
        if not isinstance(agent_cfg, dict):
            return None
        own, provider = agent_cfg.get("model"), agent_cfg.get("provider")
        model = own or (provider.get("model") if isinstance(provider, dict) else None)
        return str(model) if model else None

    @property
    def provider(self) -> str | None:
        """The provider option the agent's model was reached through, when it calls one."""
        agent_cfg = self.config.get("agent")
        if not isinstance(agent_cfg, dict) or not isinstance(agent_cfg.get("provider"), dict):
            return None
        return self.plan.choices.get("provider") or agent_cfg["provider"].get("name")

    @property
    def agent(self) -> str:
        """The agent as it was chosen with the model it called: `coder (gpt-4o-mini)`."""
        return f"{self.agent_option} ({self.model})" if self.model else self.agent_option

    @property
    def last_written(self) -> float:
        """When summary.json was written (the run ended), else the last record or the plan."""
        for name in (SUMMARY_FILE, SAMPLES_FILE, PLAN_FILE):
            path = self.run_dir / name
            if path.exists():
                return path.stat().st_mtime
        return 0.0

    @property
    def started_at(self) -> float:
        """When the run started: the first record's start (the first sample to finish began as
        the run did), else when plan.json was written. Reads one line of samples.jsonl."""
        first = next(_stream(self.run_dir / SAMPLES_FILE, _Started), None)
        return first.started_at if first is not None else (self.run_dir / PLAN_FILE).stat().st_mtime

    # --- the samples --------------------------------------------------------------------------
    def records(self) -> Iterator[SampleRecord]:
        """Every complete record in file order, streamed (a re-recorded cell appears twice)."""
        return _stream(self.run_dir / SAMPLES_FILE, SampleRecord)

    def digests(self) -> Iterator[SampleDigest]:
        """`records()` parsed only as far as metrics and resume need."""
        return _stream(self.run_dir / SAMPLES_FILE, SampleDigest)

    def recorded_cells(self) -> Iterator[CellKey]:
        """The cell of every record, parsed from each line and nothing more."""
        return _stream(self.run_dir / SAMPLES_FILE, CellKey)

    def planned(self, records: Iterable[R]) -> list[R]:
        """The records of the plan's cells (a task at its planned fingerprint, trial < trials),
        in plan order; the latest wins when a cell was recorded twice."""
        fingerprints = {t.id: t.fingerprint for t in self.plan.tasks}
        order = {task_id: i for i, task_id in enumerate(fingerprints)}
        cells: dict[tuple[str, int], R] = {}
        for rec in records:
            if fingerprints.get(rec.task_id) == rec.fingerprint and rec.trial < self.plan.trials:
                cells[(rec.task_id, rec.trial)] = rec
        return sorted(cells.values(), key=lambda r: (order[r.task_id], r.trial))

    def final_workspace(self, key: CellKey) -> Path | None:
        """The archive of a sample's kept final workspace (None: not kept), for a regrade."""
        path = final_workspace_path(self.run_dir, key)
        return path if path.is_file() else None

    # --- state and summary --------------------------------------------------------------------
    def state(self) -> RunState:
        """Complete, or partial N/M with the missing cells: from the files, read now."""
        return run_state(self.plan.cell_keys(), self.recorded_cells())

    def current_state(self) -> RunState:
        """`state()`, read cheaply: the state summary.json saved when nothing was recorded after
        it (the usual case: a run that ended), else counted from samples.jsonl's cells."""
        saved = self.saved_summary
        if saved is not None and saved.state is not None and not self._recorded_since_summary():
            return saved.state
        return self.state()

    def _recorded_since_summary(self) -> bool:
        samples = self.run_dir / SAMPLES_FILE
        if not samples.exists():
            return False
        return samples.stat().st_mtime_ns > (self.run_dir / SUMMARY_FILE).stat().st_mtime_ns

    def summarize(self, records: Iterable[SampleRecord | SampleDigest] | None = None) -> Summary:
        """The summary computed from the records (the plan's cells; `records` when the caller
        has read them already), with the state and the plan's skipped tasks - what the runner
        writes as summary.json."""
        planned = self.planned(self.digests() if records is None else records)
        summary = summarize(
            planned, self.plan.task_meta(), run_id=self.plan.run_id, trials=self.plan.trials
        )
        state = run_state(self.plan.cell_keys(), [r.key for r in planned])
        return summary.model_copy(update={"state": state, "skipped": self.plan.skipped})

    def summary(self, records: list[SampleRecord] | list[SampleDigest] | None = None) -> Summary:
        """summary.json with the state as the files tell it now and the skipped tasks as plan.json
        lists them; recomputed from the
        records when it is missing or stale (a resume recorded more samples since it was
        written)."""
        if self._summary is not None:
            return self._summary
        planned = self.planned(self.digests() if records is None else records)
        saved = self.saved_summary
        if saved is not None and saved.samples == len(planned):
            state = run_state(self.plan.cell_keys(), [r.key for r in planned])
            summary = saved.model_copy(update={"state": state, "skipped": self.plan.skipped})
        else:
            summary = self.summarize(planned)
        object.__setattr__(self, "_summary", summary)  # frozen model: cache once
        return summary

    def replayed_overrides(self, given: list[str]) -> list[str]:
        """The overrides this run was composed from, for a resume to replay before `given`. A
        redacted one (its value masked or scrubbed) is never replayed as `***`: when `given`
        sets its key again it is dropped, else a `UsageError` names every such key and how to
        give it again through the environment."""
        redacted = set(redacted_keys(self.overrides))
        again = {override_name(a) for a in given if "=" in a}
        missing = sorted(k for k in redacted if override_name(k) not in again)
        if missing:
            path = self.run_dir / OVERRIDES_FILE
            raise UsageError(redacted_replay_message(path, missing))
        return [o for o in self.overrides if o.partition("=")[0] not in redacted]

    # --- the plan, for reports ----------------------------------------------------------------
    def task_fields(self, task_id: str) -> dict[str, Any]:
        """What a task's file says that evalrun does not use (kept in plan.json), by dotted key."""
        task = self.plan.task(task_id)
        return dict(task.fields) if task is not None else {}


def read_summary(path: str | Path, role: str) -> Summary:
    """The summary of a run that ended, with its state as the files tell it now (`RunLog`); a
    `UsageError` names `role` (gate, diff, baseline, ...) and what is wrong with the folder."""
    try:
        return RunLog.open(path, ended=True).summary()
    except UsageError as exc:
        raise UsageError(f"{role}: {exc}") from exc


def is_run_dir(path: Path) -> bool:
    """A run directory holds at least the config and the plan the runner writes before it starts."""
    return (path / CONFIG_FILE).is_file() and (path / PLAN_FILE).is_file()


def sweep_jobs(path: Path) -> list[Path]:
    """The job run directories of a Hydra multirun folder (numbered subfolders), in job order."""
    if not path.is_dir():
        return []
    jobs = [p for p in path.iterdir() if p.name.isdigit() and is_run_dir(p)]
    return sorted(jobs, key=lambda p: int(p.name))


RUNS_DIR = Path("runs")  # where runs land unless run_dir= says otherwise
LATEST = "latest"


def locate_run(path: str | Path, runs: Path = RUNS_DIR) -> Path:
    """A run directory as a user names one: its path, its name as `evalrun ls` shows it (a
    folder of `runs`), or `latest` - the run under `runs` written last. `UsageError` naming
    what was looked for (with the nearest run's name) otherwise."""
    given = Path(path).expanduser()
    if given.is_dir():
        return given
    found = find_run_dirs(runs) if runs.is_dir() else []
    if str(path) == LATEST and found:
        return max(found, key=lambda d: (d / PLAN_FILE).stat().st_mtime)
    by_name = {d.name: d for d in found}
    if given.name in by_name and len(given.parts) == 1:
        return by_name[given.name]
    close = difflib.get_close_matches(given.name, sorted(by_name), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    where = f"no run in {runs}/ yet" if str(path) == LATEST else "no such directory"
    raise UsageError(f"{path}: {where}{hint} (expected a run directory, a run's name or latest)")


def find_run_dirs(root: Path, max_depth: int = 4) -> list[Path]:
    """Every run directory under `root` (or `root` itself), walking down at most `max_depth`
    levels (multirun jobs are `runs/multirun/<stamp>/<n>/`); a run directory is not searched."""
    found = []
    for dirpath, dirnames, _ in os.walk(root):
        here = Path(dirpath)
        if is_run_dir(here):
            found.append(here)
            dirnames[:] = []
        elif len(here.relative_to(root).parts) >= max_depth:
            dirnames[:] = []
        else:
            dirnames.sort()
    return found


def _listed(names: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return " and ".join(filter(None, [", ".join(names[:-1]), names[-1]]))


# --- reading files -------------------------------------------------------------------------
def _stream(path: Path, model: type[M]) -> Iterator[M]:
    """Each complete line of a JSON-lines file as `model`; a torn last line (a crash mid-write),
    a blank line or a line that does not parse is skipped."""
    if not path.exists():
        return
    with path.open("rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n") or not raw.strip():
                continue
            try:
                yield model.model_validate_json(raw)
            except ValueError:
                continue


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not readable ({exc})") from exc


def _read_yaml(path: Path, text: str | None = None) -> Any:
    """The YAML file at `path` (`text`: its content, when read already)."""
    try:
        return yamlio.safe_load(_read_text(path) if text is None else text)
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not readable YAML ({exc})") from exc


def _read_model(path: Path, model: type[M], newest: int) -> M:
    """A JSON file as `model`; a `schema_version` above `newest` is refused, never misread."""
    try:
        data = json.loads(_read_text(path))
    except ValueError as exc:
        raise UsageError(f"{path}: not readable JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a JSON object")
    version = data.get("schema_version")
    if isinstance(version, int) and version > newest:
        raise UsageError(
            f"{path}: written by a newer evalrun (schema version {version}; this evalrun reads "
            f"up to {newest}): upgrade evalrun to read this run"
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in exc.errors()[:3]
        )
        schema = model.__name__
        raise UsageError(f"{path}: does not match the {schema} schema ({problems})") from exc
