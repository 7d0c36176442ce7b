"""The judge texts an online evaluation scores with, and how a score remembers which text it came
from.

A criterion is a `JudgeSpec` (name, task_introduction, evaluation_criteria) - the same three
fields a task's `judges:` carry offline, fed to the same Opik G-Eval. They come from the online
config (`judges:` in conf/online.yaml) or from `judges_file=<yaml>` (any YAML file with a
`judges:` list, a task.yaml included). The model comes from the `judge=` group, exactly as
offline (`EVAL_JUDGE_MODEL` included).

**Judge config hash**: sha256 over the criterion's text, the judge model and the version of how a
conversation is rendered for it, shortened to 16 hex digits. Every feedback score evalrun writes
carries it twice: as the score's `category_name` (`evalrun:<hash>`) and at the end of its reason.
A thread or trace whose score of that name carries the same hash was scored by the same judge
config and is skipped; change the text or the model and it is judged again. Online rules made by
`evalrun online rule create` carry the hash in their output-schema description.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from evalrun import yamlio
from evalrun.errors import UsageError
from evalrun.formats.base import JudgeSpec

RENDER_VERSION = "conversation-json-v1"  # how `conversation.render` shows a conversation
MARKER = "evalrun:"
THREAD_INPUT = "{{context}}"  # what Opik's thread rules replace with the conversation's JSON
TRACE_INPUT = (
    '[{"role": "user", "content": {{input}}}, {"role": "assistant", "content": {{output}}}]'
)


@dataclass(frozen=True)
class Criterion:
    """One judge text with the model that applies it, and the hash of the two."""

    spec: JudgeSpec
    model: str

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def config_hash(self) -> str:
        canonical = json.dumps(
            {
                "render": RENDER_VERSION,
                "name": self.spec.name,
                "task_introduction": self.spec.task_introduction,
                "evaluation_criteria": self.spec.evaluation_criteria,
                "model": self.model,
            },
            sort_keys=True,
        )
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    @property
    def marker(self) -> str:
        return f"{MARKER}{self.config_hash}"

    def tagged_reason(self, reason: str) -> str:
        """The judge's reason with the config hash appended (kept if Opik drops category_name)."""
        return f"{reason.strip()}\n[{self.marker} judge {self.name}, model {self.model}]"

    def scored_by_me(self, score: Mapping[str, Any]) -> bool:
        """Whether a feedback score (a dict as Opik returns it) came from this judge config."""
        if score.get("name") != self.name:
            return False
        entries = [score, *((score.get("value_by_author") or {}).values())]
        return any(
            self.marker in str(e.get("category_name") or "") or self.marker in str(e.get("reason"))
            for e in entries
            if isinstance(e, Mapping)
        )


def load_specs(judges: Iterable[Any], judges_file: str | None) -> list[JudgeSpec]:
    """The criteria from `judges_file` if given, else the config's `judges` list."""
    where = "judges"
    raw: Any = list(judges)
    if judges_file:
        path = Path(judges_file).expanduser()
        where = str(path)
        if not path.is_file():
            raise UsageError(f"judges_file: {path} not found (expected a YAML file with judges:)")
        try:
            data = yamlio.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise UsageError(f"judges_file: {path} is not valid YAML: {exc}") from exc
        if not isinstance(data, dict) or "judges" not in data:
            raise UsageError(f"judges_file: {path}: expected a mapping with a judges: list")
        raw = data["judges"]
    if not isinstance(raw, list) or not raw:
        raise UsageError(
            f"{where}: expected a non-empty list of judges (name, "
            "task_introduction, evaluation_criteria)"
        )
    specs = []
    for index, item in enumerate(raw):
        try:
            specs.append(
                JudgeSpec.model_validate(dict(item) if isinstance(item, Mapping) else item)
            )
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise UsageError(f"{where}: judges[{index}].{field}: {first['msg']}") from None
    names = [s.name for s in specs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UsageError(f"{where}: judge names must be unique, repeated: {', '.join(duplicates)}")
    return specs


def rule_messages(criterion: Criterion, chain_of_thought: str, level: str) -> list[dict[str, str]]:
    """G-Eval's own two messages (opik's template, as offline) with Opik's rule variable where
    the solution goes: the thread's conversation, or a trace's input and output."""
    from opik.evaluation.metrics.llm_judges.g_eval import template

    placeholder = THREAD_INPUT if level == "threads" else TRACE_INPUT
    return [
        {str(key): str(value) for key, value in message.items()}
        for message in template.build_query_messages(
            task_introduction=criterion.spec.task_introduction,
            evaluation_criteria=criterion.spec.evaluation_criteria,
            chain_of_thought=chain_of_thought,
            input=placeholder,
        )
    ]
