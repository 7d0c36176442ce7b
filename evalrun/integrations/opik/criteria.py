"""The judge texts an online evaluation scores with, and how a score remembers which text it came
from.

A criterion is a `JudgeSpec` (name, task_introduction, evaluation_criteria) - the same three
fields a task's `judges:` carry offline, fed to the same Opik G-Eval. They come from the online
config (`judges:` in conf/online.yaml) or from `judges_file=<yaml>` (any YAML file with a
`judges:` list, a task.yaml included). The model comes from the `judge=` group, exactly as
offline (`EVAL_JUDGE_MODEL` included).

**Built-in conversation metrics**: beside the judge texts, the same config (or `judges_file`) may
list `metrics:` - names of the LLM-judged conversation metrics opik ships (`BUILTIN_METRICS`, the
score names of the installed opik). They are scored by the same judge model, retried and logged
the same way, and written to the thread as feedback scores under that name. The heuristic ones
(degeneration, knowledge retention) need no judge model and are not offered.

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
from importlib.metadata import version
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from evalrun.config import yamlio
from evalrun.errors import UsageError
from evalrun.tasks.base import JudgeSpec

RENDER_VERSION = "conversation-json-v1"  # how `conversation.render` shows a conversation
BUILTIN_RENDER = "opik-conversation-v1"  # a built-in metric gets opik's conversation as is
# score name (the installed opik's default) -> (class in opik.evaluation.metrics.conversation,
# whether a higher score is better)
BUILTIN_METRICS: dict[str, tuple[str, bool]] = {
    "session_completeness_quality": ("SessionCompletenessQuality", True),
    "conversational_coherence_score": ("ConversationalCoherenceMetric", True),
    "user_frustration_score": ("UserFrustrationMetric", False),
}
MARKER = "evalrun:"
THREAD_INPUT = "{{context}}"  # what Opik's thread rules replace with the conversation's JSON
TRACE_INPUT = (
    '[{"role": "user", "content": {{input}}}, {"role": "assistant", "content": {{output}}}]'
)


@dataclass(frozen=True)
class Criterion:
    """One judge text (or a built-in metric's name) with the model that applies it, and the
    hash of the two."""

    spec: JudgeSpec | None
    model: str
    metric: str | None = None  # a BUILTIN_METRICS name, when there is no judge text

    @property
    def name(self) -> str:
        return self.spec.name if self.spec is not None else str(self.metric)

    @property
    def higher_is_better(self) -> bool:
        return self.spec is not None or BUILTIN_METRICS[str(self.metric)][1]

    @property
    def config_hash(self) -> str:
        if self.spec is None:  # the metric's prompts are the installed opik's
            fields = {"render": BUILTIN_RENDER, "metric": self.metric, "opik": version("opik")}
        else:
            fields = {
                "render": RENDER_VERSION,
                "name": self.spec.name,
                "task_introduction": self.spec.task_introduction,
                "evaluation_criteria": self.spec.evaluation_criteria,
            }
        canonical = json.dumps({**fields, "model": self.model}, sort_keys=True)
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


def _read_file(judges_file: str) -> dict[str, Any]:
    path = Path(judges_file).expanduser()
    if not path.is_file():
        raise UsageError(f"judges_file: {path} not found (expected a YAML file with judges:)")
    try:
        data = yamlio.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise UsageError(f"judges_file: {path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict) or not ({"judges", "metrics"} & set(data)):
        raise UsageError(f"judges_file: {path}: expected a mapping with a judges: list")
    return data


def load_config(
    judges: Iterable[Any], metrics: Iterable[Any], judges_file: str | None
) -> tuple[list[JudgeSpec], list[str]]:
    """The judge texts and built-in metric names: `judges_file`'s if given (its judges: and
    metrics:), else the config's. At least one of the two lists must be non-empty."""
    where, prefix = "judges", ""
    raw: Any = list(judges)
    names: Any = list(metrics)
    if judges_file:
        where = str(Path(judges_file).expanduser())
        prefix = f"{where}: "
        data = _read_file(judges_file)
        raw, names = data.get("judges") or [], data.get("metrics", names) or []
    if not isinstance(raw, list) or not isinstance(names, list) or not (raw or names):
        raise UsageError(
            f"{where}: expected a non-empty list of judges (name, "
            "task_introduction, evaluation_criteria) or of built-in metrics"
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
    for index, name in enumerate(names):
        if name not in BUILTIN_METRICS:
            raise UsageError(
                f"{prefix}metrics[{index}]: unknown metric {name!r}; "
                f"known: {', '.join(BUILTIN_METRICS)}"
            )
    every = [s.name for s in specs] + [str(n) for n in names]
    duplicates = sorted({n for n in every if every.count(n) > 1})
    if duplicates:
        raise UsageError(f"{where}: judge names must be unique, repeated: {', '.join(duplicates)}")
    return specs, [str(n) for n in names]


def rule_messages(criterion: Criterion, chain_of_thought: str, level: str) -> list[dict[str, str]]:
    """G-Eval's own two messages (opik's template, as offline) with Opik's rule variable where
    the solution goes: the thread's conversation, or a trace's input and output."""
    from opik.evaluation.metrics.llm_judges.g_eval import template

    placeholder = THREAD_INPUT if level == "threads" else TRACE_INPUT
    assert criterion.spec is not None, "a built-in metric has no judge text to make a rule of"
    return [
        {str(key): str(value) for key, value in message.items()}
        for message in template.build_query_messages(
            task_introduction=criterion.spec.task_introduction,
            evaluation_criteria=criterion.spec.evaluation_criteria,
            chain_of_thought=chain_of_thought,
            input=placeholder,
        )
    ]
