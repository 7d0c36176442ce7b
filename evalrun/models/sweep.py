"""sweep.json as data: the jobs of a Hydra multirun (`evalrun -m ...`) side by side, and how far
LLM judges agree with the verifier and with each other. Computed by
`evalrun.analysis.sweep.summarize_sweep`, written by `evalrun.rundir.readers.write_sweep_summary`
(`SweepFile.to_json`), printed by `evalrun.report.sweep_terminal`.

A key missing from the JSON is a field left unset: a gate has `breaches` when the job's
profile could be checked and `error` when it could not.
"""

from __future__ import annotations

from pydantic import BaseModel

from evalrun.models.summary import Estimate

Figure = float | int | None
"""A metric's value (None: undefined), or the job's sample count."""


class JobGate(BaseModel):
    """The job's own threshold profile (from its config.yaml), re-checked on its summary."""

    profile: str | None
    """The profile's name."""
    breaches: list[str] = []
    """Each broken threshold, as a line (set when the profile could be checked)."""
    error: str | None = None
    """Why the profile could not be built (set instead of `breaches`)."""
    exit_code: int
    """What the job's gate exits with (`evalrun.errors.ExitCode`): 0 when nothing broke."""


class SweepJob(BaseModel):
    """One job: its run directory, the values swept, its metrics and its gate."""

    job: int
    """The job's number (its folder's name under the sweep folder)."""
    run_dir: str
    swept: dict[str, str | None]
    """The swept keys' values in this job (None: the job did not set that key)."""
    overrides: dict[str, str]
    """Every `key=value` override of the job, swept or not."""
    finished: bool
    """Whether the job wrote its summary.json; an unfinished job has no metrics or gate."""
    state: str | None
    """`complete` or `partial N/M (missing cells: ...)`; None for an unfinished job."""
    metrics: dict[str, Figure] | None
    """`samples` and the sweep's metrics (`evalrun.analysis.sweep.sweep_metrics`)."""
    intervals: dict[str, Estimate] | None
    """The 95% interval of each metric that has one."""
    gate: JobGate | None
    """None: unfinished, or its config has no profile."""


class VerifierAgreement(BaseModel):
    """One judge against the verifier: the share of its scored samples where judge-pass
    (score >= `judge_pass_at`) equals the verifier's pass."""

    samples: int
    agreement: float


class JudgePair(BaseModel):
    """Two judges of the same criterion (in two jobs): the share of the cells (task,
    fingerprint, trial) both scored where they agree."""

    a: str
    b: str
    cells: int
    agreement: float


class JudgeAgreement(BaseModel):
    """How far the sweep's LLM judges agree, keyed `<swept values>:<score name>`."""

    judge_pass_at: float
    with_verifier: dict[str, VerifierAgreement]
    between_judges: list[JudgePair]


class SweepFile(BaseModel):
    """sweep.json: see the module docstring."""

    sweep_dir: str
    swept: list[str]
    """The override keys whose value differs between jobs, in first-seen order."""
    jobs: list[SweepJob]
    judges: JudgeAgreement

    def to_json(self) -> dict[str, object]:
        """sweep.json's content: every field that was set (see the module docstring)."""
        return self.model_dump(mode="json", exclude_unset=True)
