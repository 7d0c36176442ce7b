"""What the online judge sees (a conversation rendered like Opik's {{context}}) and how a score
remembers which judge config made it."""

from __future__ import annotations

import json

import pytest
import yaml

from evalrun.errors import UsageError
from evalrun.integrations.opik.conversation import field_text, render
from evalrun.integrations.opik.criteria import Criterion, load_config
from evalrun.tasks.base import JudgeSpec

SPEC = JudgeSpec(name="tidy", task_introduction="A chat.", evaluation_criteria="Be tidy.")


def test_the_config_hash_follows_the_text_and_the_model_and_marks_scores():
    base = Criterion(SPEC, "openai/gpt-4o-mini")
    assert base.config_hash == Criterion(SPEC, "openai/gpt-4o-mini").config_hash
    assert base.config_hash != Criterion(SPEC, "gemini/gemini-2.5-flash").config_hash
    reworded = SPEC.model_copy(update={"evaluation_criteria": "Be very tidy."})
    assert base.config_hash != Criterion(reworded, "openai/gpt-4o-mini").config_hash
    mine = {"name": "tidy", "value": 0.5, "category_name": base.marker}
    assert base.scored_by_me(mine)
    assert base.scored_by_me({"name": "tidy", "reason": base.tagged_reason("ok")})  # reason kept
    by_author = {"name": "tidy", "value_by_author": {"me": {"category_name": base.marker}}}
    assert base.scored_by_me(by_author)
    assert not base.scored_by_me({"name": "tidy", "value": 0.5, "source": "online_scoring"})
    assert not base.scored_by_me({**mine, "name": "other"})


def test_a_long_conversation_keeps_its_first_and_last_turns():
    turns = [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n} " + "x" * 300}
        for n in range(200)
    ]
    text = render(turns, limit=5_000)
    shown = json.loads(text)
    assert len(text) <= 5_000
    assert shown[0]["content"].startswith("turn 0 ") and shown[-1]["content"].startswith(
        "turn 199 "
    )
    assert shown[1]["role"] == "system" and "turns left out" in shown[1]["content"]
    assert json.loads(render(turns[:2])) == [
        {"role": t["role"], "content": t["content"]} for t in turns[:2]
    ]


@pytest.mark.parametrize(
    ("value", "key", "expected"),
    [
        ("plain text", None, "plain text"),
        ({"question": "why?", "user_id": 7}, None, "why?"),
        (
            {
                "messages": [
                    {"role": "user", "content": "first"},
                    {"role": "user", "content": "last"},
                ]
            },
            None,
            "last",
        ),
        ({"content": {"user_question": "deep"}}, "content.user_question", "deep"),
        ({"messages": [{"content": "a"}, {"content": "b"}]}, "messages.-1.content", "b"),
        ({"odd": 1}, None, '{"odd": 1}'),
        (None, None, None),
    ],
)
def test_message_text_is_found_in_a_trace_input(value, key, expected):
    assert field_text(value, key, ("input", "question", "content")) == expected


def test_judges_come_from_a_file_and_bad_ones_name_the_field(tmp_path):
    good = tmp_path / "task.yaml"  # a task.yaml's judges: list works as is
    good.write_text(yaml.safe_dump({"id": "x", "judges": [SPEC.model_dump()]}))
    assert load_config([], [], str(good)) == ([SPEC], [])
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"judges": [{"name": "tidy", "task_introduction": "x"}]}))
    with pytest.raises(UsageError, match=r"judges\[0\]\.evaluation_criteria: Field required"):
        load_config([], [], str(bad))
    with pytest.raises(UsageError, match="judge names must be unique, repeated: tidy"):
        load_config([SPEC.model_dump(), SPEC.model_dump()], [], None)
    with pytest.raises(UsageError, match="expected a non-empty list of judges"):
        load_config([], [], None)


class FlakyJudge:
    """Stands in for an opik GEval metric: fails its first `failures` calls, then scores 0.8."""

    def __init__(self, failures: int):
        self.failures = failures
        self.calls = 0

    def score(self, output: str):
        from types import SimpleNamespace

        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError("judge model unreachable\nsecond line")
        return SimpleNamespace(value=0.8, reason="tidy enough", scoring_failed=False)


TURNS = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def test_a_failed_conversation_judgement_is_tried_again_then_scored_as_failed_not_zero():
    from evalrun.integrations.opik.conversation import conversation_metric

    criterion = Criterion(SPEC, "openai/gpt-4o-mini")
    recovered = FlakyJudge(failures=1)
    score = conversation_metric(criterion, recovered, attempts=2, backoff_s=0).score(TURNS)
    assert (score.value, score.reason, recovered.calls) == (0.8, "tidy enough", 2)
    assert not score.scoring_failed

    down = FlakyJudge(failures=5)
    score = conversation_metric(criterion, down, attempts=3, backoff_s=0).score(TURNS)
    assert down.calls == 3 and score.scoring_failed
    assert score.reason == (
        "judge openai/gpt-4o-mini failed after 3 attempt(s): "
        "ConnectionError: judge model unreachable"
    )
