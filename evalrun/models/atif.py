"""ATIF, the Agent Trajectory Interchange Format (Harbor's RFC 0001), as typed data.

One ATIF document is one agent session: the agent (`name`, `version`, `model_name`), its
`steps` in order - each from the `user`, the `agent` or the `system`, with its message, the
agent's tool calls, what the environment answered (`observation`) and the model call's
`metrics` - and the session's `final_metrics`. Harbor writes one per trial, renders it in its
viewer, and training pipelines read it; evalrun writes one per sample
(`evalrun.rundir.trajectory`) and reads one an agent wrote itself (`read_atif`).

The field names and rules are the RFC's, up to ATIF-v1.8 (what Harbor 0.26 validates):
unknown keys are refused everywhere (`extra` objects hold anything else), `step_id`s count from
1 with no gap, only an `agent` step carries model fields (`model_name`, `reasoning_*`,
`tool_calls`, `metrics`), an observation result names a tool call of its own step, a media part
carries a source of its own kind, embedded sub-agent trajectories have unique `trajectory_id`s.
A value that is not known is left out, never written as 0: every optional field is dropped from
the JSON when it is None (`to_json`).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evalrun.errors import UsageError

SchemaVersion = Literal[
    "ATIF-v1.0",
    "ATIF-v1.1",
    "ATIF-v1.2",
    "ATIF-v1.3",
    "ATIF-v1.4",
    "ATIF-v1.5",
    "ATIF-v1.6",
    "ATIF-v1.7",
    "ATIF-v1.8",
]
SCHEMA_VERSION: SchemaVersion = "ATIF-v1.8"  # what evalrun writes
AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")
AUDIO_SPELLINGS = {  # names producers use for a registered audio type, stored as that type
    "audio/mp3": "audio/mpeg",
    "audio/mpga": "audio/mpeg",
    "audio/x-mpeg": "audio/mpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/x-m4a": "audio/mp4",
    "audio/m4a": "audio/mp4",
    "audio/x-aac": "audio/aac",
    "audio/x-flac": "audio/flac",
    "audio/x-aiff": "audio/aiff",
}


class _Strict(BaseModel):
    """Every ATIF object refuses a key the RFC does not define."""

    model_config = ConfigDict(extra="forbid")


class ImageSource(_Strict):
    media_type: Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
    path: str  # a file path (relative to the trajectory file) or a URL


class AudioSource(_Strict):
    media_type: Literal[
        "audio/wav",
        "audio/mpeg",
        "audio/mp4",
        "audio/aac",
        "audio/ogg",
        "audio/flac",
        "audio/webm",
        "audio/aiff",
    ]
    path: str
    duration_sec: float | None = Field(default=None, ge=0)

    @field_validator("media_type", mode="before")
    @classmethod
    def _registered(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        spelled = value.strip().lower()
        return AUDIO_SPELLINGS.get(spelled, spelled)


class ContentPart(_Strict):
    """One part of a multimodal message or result: text, or an image / audio by reference."""

    type: Literal["text", "image", "audio"]
    text: str | None = None
    source: ImageSource | AudioSource | None = None

    @model_validator(mode="after")
    def _fits_its_type(self) -> ContentPart:
        if self.type == "text":
            if self.text is None or self.source is not None:
                raise ValueError("a text part has `text` and no `source`")
            return self
        kind = ImageSource if self.type == "image" else AudioSource
        if self.text is not None or not isinstance(self.source, kind):
            raise ValueError(f"an {self.type} part has a {kind.__name__} `source` and no `text`")
        return self


Content = str | list[ContentPart]


class SubagentTrajectoryRef(_Strict):
    """A delegated sub-agent's trajectory: embedded (`trajectory_id`) or in a file
    (`trajectory_path`); `session_id` alone does not say which."""

    trajectory_id: str | None = None
    session_id: str | None = None
    trajectory_path: str | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _resolvable(self) -> SubagentTrajectoryRef:
        if self.trajectory_id is None and self.trajectory_path is None:
            raise ValueError("a sub-agent reference needs `trajectory_id` or `trajectory_path`")
        return self


class ToolCall(_Strict):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = None


class ObservationResult(_Strict):
    source_call_id: str | None = None  # the tool call of the same step this answers, if any
    content: Content | None = None
    subagent_trajectory_ref: list[SubagentTrajectoryRef] | None = None
    extra: dict[str, Any] | None = None


class Observation(_Strict):
    results: list[ObservationResult]


class Metrics(_Strict):
    """One model call's figures. `prompt_tokens` counts cached tokens too; `cached_tokens` is
    the part of it read from a cache."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(_Strict):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None


class Agent(_Strict):
    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


class Step(_Strict):
    step_id: int = Field(ge=1)
    timestamp: str | None = None  # ISO 8601
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: Content
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    is_copied_context: bool | None = None
    llm_call_count: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None

    @field_validator("timestamp")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is not None:
            datetime.fromisoformat(value.replace("Z", "+00:00"))  # ValueError: not ISO 8601
        return value

    @model_validator(mode="after")
    def _model_fields_on_agent_steps_only(self) -> Step:
        if self.source != "agent":
            present = [name for name in AGENT_ONLY if getattr(self, name) is not None]
            if present:
                raise ValueError(f"{', '.join(present)}: only an agent step has it")
        elif self.llm_call_count == 0 and (self.metrics or self.reasoning_content is not None):
            raise ValueError("a step with llm_call_count 0 made no model call: no metrics")
        return self


class Trajectory(_Strict):
    schema_version: SchemaVersion = SCHEMA_VERSION
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: Agent
    steps: list[Step] = Field(min_length=1)
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    extra: dict[str, Any] | None = None
    subagent_trajectories: list[Trajectory] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Trajectory:
        for index, step in enumerate(self.steps):
            if step.step_id != index + 1:
                raise ValueError(f"steps[{index}].step_id is {step.step_id}, not {index + 1}")
            calls = {call.tool_call_id for call in step.tool_calls or []}
            for result in step.observation.results if step.observation else []:
                if result.source_call_id is not None and result.source_call_id not in calls:
                    raise ValueError(
                        f"steps[{index}].observation answers tool call "
                        f"{result.source_call_id!r}, which that step did not make"
                    )
        embedded = [sub.trajectory_id for sub in self.subagent_trajectories or []]
        if None in embedded or len(set(embedded)) != len(embedded):
            raise ValueError("each embedded sub-agent trajectory needs a unique trajectory_id")
        return self

    def to_json(self) -> dict[str, Any]:
        """The document as JSON data, unknown (None) fields left out."""
        return self.model_dump(mode="json", exclude_none=True)


def read_atif(text: str | bytes, where: str) -> Trajectory:
    """Parse and validate an ATIF document; `UsageError` naming `where` and the first bad field."""
    try:
        return Trajectory.model_validate(json.loads(text))
    except ValueError as exc:  # json's and pydantic's (ValidationError is a ValueError)
        if isinstance(exc, ValidationError):
            # the most specific error: of a message's two forms, the one that went deeper
            worst = max(exc.errors(), key=lambda error: len(error["loc"]))
            field = ".".join(str(p) for p in worst["loc"]) or "(document)"
            raise UsageError(f"{where}: not ATIF: {field}: {worst['msg']}") from None
        raise UsageError(f"{where}: not JSON: {exc}") from None
