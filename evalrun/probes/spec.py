"""Probe folders: the one place that knows their layout, loads them strictly and makes them Tasks.

```
probes/<id>/
  probe.yaml       id, prompt, max_steps, tags, expectations, optional judges / difficulty /
                   agent_timeout_s / assertions ; unknown keys rejected
  setup/           the fixture workspace, exactly as for tasks (setup/setup.sh runs, then goes)
  scripted/good.yaml   model turns that must meet every expectation  (`evalrun check`)
  scripted/bad.yaml    model turns that must break at least one
```

A script is a list of model turns, each `call:` (one `{tool: {args}}` mapping, or a list of them,
called in that order) or `answer:` (the final message):

```yaml
- call: {read: {path: config.py}}
- call: [{grep: {pattern: TODO}}, {ls: {path: src}}]
- answer: The port is 8080.
```

A probe loads as a `Task` whose format is `ProbeFormat`, so it gets the same trials, engine,
store, metrics and reports as a task. Loading errors are `TaskFormatError`s naming file and field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrun.config import yamlio
from evalrun.errors import TaskFormatError
from evalrun.probes.expect import MODELS, Expectation, expectation_names
from evalrun.tasks.base import Difficulty, JudgeSpec, TaskSpec

PROBE_FILE = "probe.yaml"
RUNS = ("good", "bad")


@dataclass(frozen=True)
class ProbeLayout:
    """Every path of a probe folder (the fixture is `setup/`, as in a native task)."""

    root: Path

    @property
    def task_file(self) -> Path:
        return self.root / PROBE_FILE

    @property
    def setup_dir(self) -> Path:
        return self.root / "setup"

    def run_file(self, run: str) -> Path:
        return self.root / "scripted" / f"{run}.yaml"


class ProbeSpec(BaseModel):
    """The contents of probe.yaml."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    prompt: str = Field(min_length=1)
    max_steps: int = Field(gt=0)
    difficulty: Difficulty = Difficulty.easy
    tags: tuple[str, ...] = ()
    expectations: tuple[Expectation, ...] = Field(min_length=1)
    judges: tuple[JudgeSpec, ...] = ()
    agent_timeout_s: float | None = Field(default=None, gt=0)
    # Natural-language checks of the final answer, run as an Opik test suite with tracker=opik
    # (evalrun.integrations.opik.suite), beside the deterministic expectations; ignored by other
    # trackers.
    assertions: tuple[Annotated[str, Field(min_length=1)], ...] = ()

    @property
    def names(self) -> list[str]:
        return expectation_names(list(self.expectations))

    def task_spec(self) -> TaskSpec:
        return TaskSpec(
            id=self.id,
            prompt=self.prompt,
            max_steps=self.max_steps,
            difficulty=self.difficulty,
            tags=self.tags,
            judges=self.judges,
            agent_timeout_s=self.agent_timeout_s,
        )


ToolUse = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Turn:
    """One scripted model turn: tool calls, or the final answer."""

    calls: tuple[ToolUse, ...] = ()
    answer: str | None = None


def _yaml(path: Path) -> Any:
    try:
        return yamlio.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise TaskFormatError(path, f"not readable YAML: {exc}") from exc


def _tool_use(path: Path, where: str, item: Any) -> ToolUse:
    if not (isinstance(item, dict) and len(item) == 1):
        raise TaskFormatError(
            path, f"{where}: expected one {{tool: {{args}}}} mapping, got {item!r}"
        )
    ((tool, args),) = item.items()
    if not isinstance(args, dict):
        raise TaskFormatError(path, f"{where}: arguments of {tool!r} must be a mapping")
    return str(tool), args


def load_script(path: Path) -> list[Turn]:
    """Parse a scripted run; `TaskFormatError` naming the turn that is malformed."""
    if not path.is_file():
        raise TaskFormatError(
            path, "missing: every probe ships scripted/good.yaml and scripted/bad.yaml"
        )
    raw = _yaml(path)
    if not isinstance(raw, list) or not raw:
        raise TaskFormatError(path, "expected a non-empty list of turns (call: ... / answer: ...)")
    turns = []
    for i, item in enumerate(raw, 1):
        where = f"turn {i}"
        if not isinstance(item, dict) or set(item) not in ({"call"}, {"answer"}):
            raise TaskFormatError(path, f"{where}: expected exactly one of call: or answer:")
        if "answer" in item:
            turns.append(Turn(answer=str(item["answer"])))
            continue
        calls = item["call"] if isinstance(item["call"], list) else [item["call"]]
        turns.append(Turn(calls=tuple(_tool_use(path, where, c) for c in calls)))
    return turns


def load_spec(folder: Path) -> ProbeSpec:
    layout = ProbeLayout(folder)
    if not layout.task_file.is_file():
        raise TaskFormatError(layout.task_file, "missing: every probe folder needs a probe.yaml")
    raw = _yaml(layout.task_file)
    if not isinstance(raw, dict):
        raise TaskFormatError(layout.task_file, "expected a mapping of fields")
    try:
        spec = ProbeSpec.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or None
        message = first["msg"]
        if first["type"] == "extra_forbidden":
            message = f"unknown key (allowed: {', '.join(_allowed(first['loc']))})"
        raise TaskFormatError(layout.task_file, message, field=loc) from exc
    if spec.id != folder.name:
        raise TaskFormatError(
            layout.task_file, f"id {spec.id!r} does not match its folder name {folder.name!r}", "id"
        )
    explicit = [e.name for e in spec.expectations if e.name]
    if len(explicit) != len(set(explicit)):
        raise TaskFormatError(layout.task_file, "expectation names must be unique", "expectations")
    return spec


def _allowed(loc: tuple[Any, ...]) -> list[str]:
    """The keys allowed where an unknown key was found: probe.yaml's, or one expectation's."""
    if len(loc) >= 3 and loc[0] == "expectations" and loc[2] in MODELS:
        return [f.alias or n for n, f in MODELS[loc[2]].model_fields.items()]
    return list(ProbeSpec.model_fields)
