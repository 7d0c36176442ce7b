"""What one sample produced: the line written to samples.jsonl, and the agent's result inside it;
the cells of a plan and whether each has a record (`RunState`: a run complete or partial); the
tasks of a suite that did not run (`SkippedEntry`, in plan.json and summary.json)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any, Literal, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

from evalrun.models import writable as bounds
from evalrun.models.writable import (
    bounded_args,
    escape_surrogates,
    tail_text,
    within_budget,
)


class Outcome(StrEnum):
    """`error` means the harness could not produce a verdict; it is kept out of pass rates."""

    passed = "pass"
    failed = "fail"
    error = "error"


def _valid_text(text: str | None) -> str | None:
    """An agent's text as valid Unicode: an undecodable byte it carried (`surrogateescape`)
    becomes `\\xNN`, so the text can be written, sent and graded anywhere."""
    return None if text is None else escape_surrogates(text)


class ToolCall(BaseModel):
    """One step of an agent's trajectory. What an agent puts in one is made writable when the
    step is made or a field set (`evalrun.models.writable`)."""

    model_config = ConfigDict(validate_assignment=True)

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    result: str = ""  # a bounded summary, not the full output
    duration_s: float | None = None
    error: str | None = None
    # Tokens of the model response that asked for this call, when the agent knows them: set on
    # the first call of that response only, so a trajectory's tokens add up.
    input_tokens: int | None = None
    output_tokens: int | None = None
    call_id: str | None = None  # the id the model API gave the call, when the agent's log keeps it

    @field_validator("args", mode="before")
    @classmethod
    def _bounded(cls, args: Any) -> Any:
        """Whatever an agent put in them (any depth, keys, types or size), bounded when the step
        is made, so its log, its report and its record can all hold it
        (`evalrun.models.writable`)."""
        return bounded_args(args) if isinstance(args, Mapping) else args

    _text = field_validator("name", "result", "error")(_valid_text)


class Usage(BaseModel):
    """Tokens and money. `cost_usd` is None when unknown - never a made-up 0.

    `input_tokens` counts every prompt token, cached ones included; `cache_read_tokens` and
    `cache_write_tokens` are the parts of it read from / written to a prompt cache.
    `cost_source` says where `cost_usd` came from, or why it is unknown.
    """

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    cost_source: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cost_equivalent_tokens(self) -> float:
        """Tokens weighted like typical prices - fresh input x1, cache write x1.25, cache read
        x0.1, output x5 - so runs on unpriced models can still be compared on cost."""
        fresh = max(self.input_tokens - self.cache_read_tokens - self.cache_write_tokens, 0)
        return (
            fresh
            + 1.25 * self.cache_write_tokens
            + 0.1 * self.cache_read_tokens
            + 5 * self.output_tokens
        )


class ModelCall(BaseModel):
    """One model request of a sample as it was counted - by evalrun's gateway (the CLI
    presets) or by pydantic-ai (`coder`): its model, tokens (`input_tokens` with cached ones),
    cost (None: unpriced), the ids of the tool calls its response asked for, and when it ran
    (the gateway's; None where it was not kept)."""

    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    tool_call_ids: list[str] = Field(default_factory=list)
    counted_by: str = "evalrun's gateway"
    started_at: float | None = None  # when the gateway forwarded it (epoch seconds)
    duration_s: float | None = None  # until its response was read in full


class AgentResult(BaseModel):
    """What an agent hands back: its final message, what it did, what it cost, how it ended.
    Its text is made valid Unicode when it is made or set (`_valid_text`)."""

    model_config = ConfigDict(validate_assignment=True)

    output: str = ""
    trajectory: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    error: str | None = None
    stderr: str = ""
    """What the agent's process wrote to stderr, its tail (command agents), whatever its exit."""
    model_calls: list[ModelCall] = Field(default_factory=list)
    """Each model request as it was counted, in order (empty: not counted one by one)."""
    atif: dict[str, Any] | None = None
    """The trajectory the agent wrote itself in ATIF (`evalrun.models.atif`), validated when it
    was read; the sample's trajectory.json is made from it (`evalrun.rundir.trajectory`)."""

    _text = field_validator("output", "error", "stderr")(_valid_text)


ChangeKind = Literal["added", "removed", "modified"]


class FileChange(BaseModel):
    """One file the agent added, removed or modified (`evalrun.run.workspace_diff`)."""

    path: str  # relative to the workspace
    change: ChangeKind
    binary: bool = False  # named only: no diff
    size: int | None = None  # bytes, the new version's (the old one's when removed)
    diff: str = ""  # unified diff of a text file (or a symlink's target), bounded
    note: str | None = None  # why the diff is cut or missing; a mode change
    step: str | None = None  # the step of a multi-step task whose turn changed it


class WorkspaceDiff(BaseModel):
    """What the agent changed in the workspace, from before its turn to after it."""

    files: list[FileChange] = Field(default_factory=list)
    skipped: str | None = None  # why no comparison was made (a huge workspace, no python3)

    def counts(self) -> dict[str, int]:
        """{"added": n, "modified": n, "removed": n}, in that order, zeros left out."""
        kinds = ("added", "modified", "removed")
        found = {kind: sum(f.change == kind for f in self.files) for kind in kinds}
        return {kind: n for kind, n in found.items() if n}

    def summary(self) -> str:
        """`2 modified, 1 added` / `no change` / `not compared: <why>`."""
        if self.skipped:
            return f"not compared: {self.skipped}"
        counts = self.counts()
        return ", ".join(f"{n} {what}" for what, n in counts.items()) or "no change"

    def patch(self) -> str:
        """Every text diff, one after the other (binary files named)."""
        parts = []
        for item in self.files:
            prefix = f"[step {item.step}] " if item.step else ""
            if item.diff:
                parts.append(f"# {prefix}{item.path}\n{item.diff}" if prefix else item.diff)
            else:
                what = "binary file" if item.binary else "file"
                note = f" ({item.note})" if item.note else ""
                parts.append(f"{prefix}{what} {item.change}: {item.path}{note}\n")
        return "".join(parts)


class KeptWorkspace(BaseModel):
    """Whether the sample's final workspace - what the agent left, before any verifier file
    went in - was kept in the run directory for `evalrun regrade`; its compressed size, or why
    it was not kept (over a cap, the run's quota used up, the sandbox cannot copy it out)."""

    kept: bool
    bytes: int | None = None
    reason: str | None = None

    def describe(self) -> str:
        return f"kept ({self.bytes or 0:,} bytes)" if self.kept else f"not kept: {self.reason}"


class RegradeOf(BaseModel):
    """On a regraded sample: the run it came from and the outcome it had there."""

    run_id: str
    outcome: Outcome


class Phases(BaseModel):
    """Seconds spent in each phase of a sample (None: the phase did not run)."""

    setup: float | None = None
    agent: float | None = None
    verify: float | None = None


class Fingerprinted(Protocol):
    """A task as a cell names it: its id and the fingerprint of its content."""

    @property
    def id(self) -> str: ...

    @property
    def fingerprint(self) -> str: ...


class CellKey(BaseModel):
    """One cell of the plan: a task (at a given content fingerprint) and a trial index."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    fingerprint: str
    trial: int

    @classmethod
    def of(cls, task: Fingerprinted, trial: int) -> CellKey:
        """The cell of trial `trial` of `task` (a loaded task, or one named in plan.json)."""
        return cls(task_id=task.id, fingerprint=task.fingerprint, trial=trial)

    @property
    def label(self) -> str:
        return f"{self.task_id}#{self.trial}"


class RunState(BaseModel):
    """Whether every planned cell has a record. `missing` lists the cells without one
    (`task#trial`, in plan order): exactly what a resume would run."""

    cells: int
    recorded: int
    missing: list[str] = []

    @computed_field  # type: ignore[prop-decorator]
    @property
    def complete(self) -> bool:
        return not self.missing and self.recorded == self.cells

    @computed_field  # type: ignore[prop-decorator]
    @property
    def label(self) -> str:
        return self.describe()

    def describe(self, shown: int = 5) -> str:
        """`complete`, or `partial 13/30 (missing cells: a#0, a#1, b#0 and 14 more)`."""
        if self.complete:
            return "complete"
        listed = ", ".join(self.missing[:shown])
        more = f" and {len(self.missing) - shown} more" if len(self.missing) > shown else ""
        return f"partial {self.recorded}/{self.cells} (missing cells: {listed}{more})"


class SkipKind(StrEnum):
    """Why a task of the suite did not run."""

    cannot_load = "cannot load"  # its folder is broken
    cannot_run = "cannot run"  # the sandbox cannot host it


class SkippedEntry(BaseModel):
    """A task of the suite that did not run, and why; `reason` names the file/key or what is
    missing."""

    id: str
    kind: SkipKind
    reason: str


def run_state(planned: Iterable[CellKey], recorded: Iterable[CellKey]) -> RunState:
    """THE definition of a run's state: which planned cells (a task at its planned fingerprint,
    a trial) have at least one record. Every reader - summary, ls, show, report, gate, diff,
    trackers - gets the state from here (`evalrun.rundir.log.RunLog.state`)."""
    cells = list(dict.fromkeys(planned))
    have = set(recorded)
    missing = [key.label for key in cells if key not in have]
    return RunState(cells=len(cells), recorded=len(cells) - len(missing), missing=missing)


class SampleCore(BaseModel):
    """What every reader of a sample needs: its cell, its outcome and why, the time of each
    phase and the judges' scores. `SampleRecord` (the whole line) and `SampleDigest` (the line
    parsed only this far) share it."""

    task_id: str
    fingerprint: str
    trial: int
    outcome: Outcome
    reason: str | None = None
    phases: Phases = Field(default_factory=Phases)
    scores: dict[str, float | None] = Field(default_factory=dict)  # judge name -> 0-1; None: failed
    judge_reasons: dict[str, str] = Field(default_factory=dict)  # judge name -> its reason

    @property
    def key(self) -> CellKey:
        return CellKey(task_id=self.task_id, fingerprint=self.fingerprint, trial=self.trial)


class SampleRecord(SampleCore):
    """One finished sample: one JSON line in samples.jsonl."""

    run_id: str
    verify_exit_code: int | None = None
    verify_output: str = ""
    timed_out_phase: Literal["setup", "agent", "verify"] | None = None
    agent: AgentResult = Field(default_factory=AgentResult)
    attempts: int = 1
    started_at: float
    finished_at: float
    workspace_diff: WorkspaceDiff | None = None  # None: not recorded (a harness error)
    final_workspace: KeptWorkspace | None = None  # None: keeping was off, or no agent phase
    regrade_of: RegradeOf | None = None  # set by `evalrun regrade`: the verdict is new
    workspace_kept: str | None = None  # where keep_workspaces=true left the workspace


class _AgentUsage(BaseModel):
    usage: Usage = Field(default_factory=Usage)


class SampleDigest(SampleCore):
    """The fields of a SampleRecord that metrics and resume need (judge scores included).
    Parsing a line into this skips trajectories and outputs, which makes reading a large run
    several times faster."""

    agent: _AgentUsage = Field(default_factory=_AgentUsage)


# --- a record as it can be written (evalrun.models.writable) -------------------------------
def writable(record: SampleRecord) -> SampleRecord:
    """`record` made writable (see the module docstring). Never raises: a record that cannot be
    made so is its cell's `minimal` record."""
    try:
        return _bounded(record)
    except Exception as exc:  # whatever it is, the cell keeps a record
        return minimal(record, f"{type(exc).__name__}: {exc}")


def _bounded(record: SampleRecord) -> SampleRecord:
    done = within_budget(record, 0)
    if done is None:
        return minimal(
            record, f"more than {bounds.MAX_RECORD_CHARS:,} characters even with texts cut"
        )
    clean, notes = cast("SampleRecord", done[0]), done[1]
    if notes:
        note = f"[record cut: {'; '.join(notes)}]"
        clean = clean.model_copy(
            update={"reason": f"{clean.reason} {note}" if clean.reason else note}
        )
    return clean


def minimal(record: SampleRecord, why: str) -> SampleRecord:
    """The record of `record`'s cell with nothing the agent shaped: its outcome, timings and
    reason (bounded), and `why` the full record could not be written."""
    reason = escape_surrogates(tail_text(record.reason or "", bounds.REASON_CHARS))
    note = (
        f"[the full record could not be written: {escape_surrogates(why)[: bounds.REASON_CHARS]}]"
    )
    return SampleRecord(
        run_id=escape_surrogates(record.run_id),
        task_id=escape_surrogates(record.task_id),
        fingerprint=escape_surrogates(record.fingerprint),
        trial=record.trial,
        outcome=record.outcome,
        reason=f"{reason} {note}" if reason else note,
        verify_exit_code=record.verify_exit_code,
        timed_out_phase=record.timed_out_phase,
        phases=record.phases,
        attempts=record.attempts,
        started_at=record.started_at,
        finished_at=record.finished_at,
    )
