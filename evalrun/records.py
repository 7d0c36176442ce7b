"""What one sample produced: the line written to samples.jsonl, and the agent's result inside it."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Outcome(StrEnum):
    """`error` means the harness could not produce a verdict; it is kept out of pass rates."""

    passed = "pass"
    failed = "fail"
    error = "error"


class ToolCall(BaseModel):
    """One step of an agent's trajectory."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    result: str = ""  # a bounded summary, not the full output
    duration_s: float | None = None
    error: str | None = None


class Usage(BaseModel):
    """Tokens and money. `cost_usd` is None when unknown - never a made-up 0."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None


class AgentResult(BaseModel):
    """What an agent hands back: its final message, what it did, what it cost, how it ended."""

    output: str = ""
    trajectory: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    error: str | None = None


class Phases(BaseModel):
    """Seconds spent in each phase of a sample (None: the phase did not run)."""

    setup: float | None = None
    agent: float | None = None
    verify: float | None = None


class CellKey(BaseModel):
    """One cell of the plan: a task (at a given content fingerprint) and a trial index."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    fingerprint: str
    trial: int

    @property
    def label(self) -> str:
        return f"{self.task_id}#{self.trial}"


class SampleRecord(BaseModel):
    """One finished sample: one JSON line in samples.jsonl."""

    run_id: str
    task_id: str
    fingerprint: str
    trial: int
    outcome: Outcome
    reason: str | None = None
    verify_exit_code: int | None = None
    verify_output: str = ""
    timed_out_phase: str | None = None
    phases: Phases = Field(default_factory=Phases)
    agent: AgentResult = Field(default_factory=AgentResult)
    attempts: int = 1
    started_at: float
    finished_at: float
    scores: dict[str, float | None] = Field(default_factory=dict)

    @property
    def key(self) -> CellKey:
        return CellKey(task_id=self.task_id, fingerprint=self.fingerprint, trial=self.trial)
