"""evalrun's ATIF models read what Harbor's format allows and refuse what it forbids, naming the
field - so an agent's own trajectory is either kept whole or refused with a reason."""

from __future__ import annotations

import copy
import json

import pytest

from evalrun.errors import UsageError
from evalrun.models.atif import read_atif
from tests.atif_check import schema_problems

# A document using most of ATIF-v1.8: multimodal content, a sub-agent by reference, reasoning,
# per-step metrics with token ids, an orchestration step that made no model call.
FULL = {
    "schema_version": "ATIF-v1.8",
    "session_id": "s-1",
    "agent": {
        "name": "my-agent",
        "version": "1.0",
        "model_name": "m",
        "tool_definitions": [{"type": "function", "function": {"name": "bash"}}],
    },
    "steps": [
        {"step_id": 1, "source": "system", "message": "You are helpful."},
        {
            "step_id": 2,
            "timestamp": "2026-12-03T10:00:00Z",
            "source": "user",
            "message": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image", "source": {"media_type": "image/png", "path": "a.png"}},
                {"type": "audio", "source": {"media_type": "audio/mpeg", "path": "b.mp3"}},
            ],
        },
        {
            "step_id": 3,
            "source": "agent",
            "message": "Looking.",
            "reasoning_content": "Let me run a tool.",
            "reasoning_effort": "high",
            "tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {}}],
            "observation": {
                "results": [
                    {"source_call_id": "c1", "content": "a cat"},
                    {"subagent_trajectory_ref": [{"trajectory_path": "sub.json"}]},
                ]
            },
            "metrics": {
                "prompt_tokens": 10,
                "completion_tokens": 2,
                "completion_token_ids": [1, 2],
            },
            "llm_call_count": 1,
        },
        {"step_id": 4, "source": "agent", "message": "dispatching", "llm_call_count": 0},
    ],
    "final_metrics": {"total_prompt_tokens": 10, "total_steps": 4},
}


def test_a_full_v1_8_document_reads_and_writes_back_the_same():
    assert read_atif(json.dumps(FULL), "t.json").to_json() == FULL
    assert schema_problems(FULL) == []


def test_an_unregistered_spelling_of_a_media_type_is_stored_as_the_registered_one():
    spelled = _broken(
        lambda d: d["steps"][1]["message"][2]["source"].update(media_type="audio/mp3")
    )
    assert read_atif(json.dumps(spelled), "t.json").to_json() == FULL


def _broken(change) -> dict:
    document = copy.deepcopy(FULL)
    change(document)
    return document


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            lambda d: d["steps"][0].update(metrics={"prompt_tokens": 1}),
            "steps.0: Value error, metrics: only an agent step",
        ),
        (lambda d: d["steps"][3].update(step_id=7), "steps[3].step_id is 7, not 4"),
        (
            lambda d: d["steps"][2]["observation"]["results"][0].update(source_call_id="zz"),
            "tool call 'zz', which that step did not make",
        ),
        (lambda d: d.update(steps=[]), "steps: List should have at least 1 item"),
        (lambda d: d["agent"].pop("version"), "agent.version: Field required"),
        (lambda d: d["agent"].update(colour="red"), "agent.colour: Extra inputs are not permitted"),
        (
            lambda d: d["steps"][3].update(metrics={"prompt_tokens": 1}),
            "llm_call_count 0 made no model call",
        ),
        (
            lambda d: d["steps"][1]["message"][1].update(text="x"),
            "an image part has a ImageSource `source` and no `text`",
        ),
        (
            lambda d: d["steps"][2]["observation"]["results"][1].update(
                subagent_trajectory_ref=[{"session_id": "x"}]
            ),
            "needs `trajectory_id` or `trajectory_path`",
        ),
        (lambda d: d["steps"][1].update(timestamp="yesterday"), "steps.1.timestamp"),
        (lambda d: d.update(schema_version="ATIF-v2.0"), "schema_version: Input should be"),
    ],
)
def test_what_atif_forbids_is_refused_naming_the_field_and_the_schema_agrees(change, said):
    document = _broken(change)
    with pytest.raises(UsageError, match=r"^t\.json: not ATIF: ") as caught:
        read_atif(json.dumps(document), "t.json")
    assert said in str(caught.value)
    assert schema_problems(document), "the independent schema must refuse it too"


def test_a_file_that_is_not_json_is_named():
    with pytest.raises(UsageError, match=r"^t\.json: not JSON: Expecting value"):
        read_atif("nope", "t.json")
