"""`evalrun online rule create|list`: Opik online LLM-as-judge rules from the offline judge texts.

Against stand-ins only: the opik SDK's automation-rule client talks to `tests/opik_standin.py`
(a local stand-in for Opik's REST API); the chain of thought comes from `tests/openai_standin.py`.
"""

from __future__ import annotations

import pytest
import yaml

from evalrun.cli.main import main
from tests.integrations.opik.online.helpers import COT, LIVE, log_threads, online, online_overrides

RULES = "v1/private/automations/evaluators"


def rule_cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exit_info:
        main(["online", "rule", *args])
    return exit_info.value.code


def writes(opik) -> list:
    return [r for r in opik.requests if r.path.startswith(RULES) and r.method in ("POST", "PATCH")]


@pytest.fixture
def live(opik):
    log_threads({"t-1": [("hello", "hi [quality 8]")]})
    return opik


def create(model, tmp_path, *more: str) -> int:
    base = [o for o in online_overrides(model.base_url, tmp_path / "unused") if "run_dir" not in o]
    return rule_cli("create", *base, *more)


def test_create_makes_one_thread_rule_per_criterion_with_the_offline_g_eval_text(
    live, model, tmp_path, capsys
):
    assert create(model, tmp_path, "sample_rate=0.1") == 0

    rules = {r["name"]: r for r in live.rules.values()}
    assert set(rules) == {"evalrun request_resolved", "evalrun honest_reporting"}
    rule = rules["evalrun request_resolved"]
    assert rule["type"] == "trace_thread_llm_as_judge" and rule["action"] == "evaluator"
    assert rule["sampling_rate"] == 0.1 and rule["enabled"] is True
    assert rule["project_ids"] == [live.project_id(LIVE)]
    code = rule["code"]
    assert code["model"]["name"] == "standin-model"  # the judge model, without litellm's vendor
    system, user = code["messages"]
    assert system["role"] == "SYSTEM" and COT in system["content"]
    assert "resolved what the user asked for" in system["content"]
    assert user == {
        "role": "USER",
        "content": "*** INPUT:\n<opik_solution>\n{{context}}\n</opik_solution>",
    }
    assert code["schema"] == [
        {
            "name": "request_resolved",
            "type": "DOUBLE",
            "description": code["schema"][0]["description"],
        }
    ]
    assert "evalrun:" in code["schema"][0]["description"]

    # the rule's prompt is exactly what the online run's judge is sent, conversation aside
    model.requests.clear()
    assert online(model.base_url, tmp_path / "run")[0] == 0
    scoring = [
        r.body["messages"]
        for r in model.requests
        if "<opik_solution>" in r.body["messages"][-1]["content"]
    ]
    assert system["content"] in {m[0]["content"] for m in scoring}
    assert not live.unhandled


def test_create_again_changes_nothing_and_a_new_rate_or_text_updates_in_place(
    live, model, tmp_path, capsys
):
    assert create(model, tmp_path, "sample_rate=0.1") == 0
    ids = set(live.rules)
    made, calls = len(writes(live)), len(model.requests)

    assert create(model, tmp_path, "sample_rate=0.1") == 0
    assert len(writes(live)) == made and len(model.requests) == calls
    assert capsys.readouterr().out.count("unchanged") == 2

    assert create(model, tmp_path, "sample_rate=0.25") == 0
    assert set(live.rules) == ids  # updated, not duplicated
    assert {r["sampling_rate"] for r in live.rules.values()} == {0.25}
    assert len(model.requests) == calls  # the text did not change: no chain of thought asked

    judges = tmp_path / "judges.yaml"
    judges.write_text(
        yaml.safe_dump(
            {
                "judges": [
                    {
                        "name": "request_resolved",
                        "task_introduction": "A support chat.",
                        "evaluation_criteria": "Did the customer get what they came for?",
                    }
                ]
            }
        )
    )
    assert create(model, tmp_path, "sample_rate=0.25", f"judges_file={judges}") == 0
    assert set(live.rules) == ids
    resolved = next(r for r in live.rules.values() if r["name"] == "evalrun request_resolved")
    assert "Did the customer get what they came for?" in resolved["code"]["messages"][0]["content"]


def test_list_shows_the_rules_and_whether_they_match_the_judge_config(
    live, model, tmp_path, capsys
):
    assert create(model, tmp_path, "sample_rate=0.1") == 0
    capsys.readouterr()
    base = [o for o in online_overrides(model.base_url, tmp_path / "x") if "run_dir" not in o]

    assert rule_cli("list", *base) == 0
    out = capsys.readouterr().out
    assert out.count("matches the judge config") == 2 and "2 rule(s) in project support-bot" in out

    judges = tmp_path / "judges.yaml"
    judges.write_text(
        yaml.safe_dump(
            {
                "judges": [
                    {
                        "name": "request_resolved",
                        "task_introduction": "A support chat.",
                        "evaluation_criteria": "Reworded.",
                    }
                ]
            }
        )
    )
    assert rule_cli("list", *base, f"judges_file={judges}") == 0
    out = capsys.readouterr().out
    assert "differs" in out and "evalrun, not in this judge config" in out
    assert rule_cli("list", "project=null") == 0
    assert "2 rule(s)\n" in capsys.readouterr().out


def test_traces_level_makes_trace_rules_with_input_and_output_variables(live, model, tmp_path):
    assert create(model, tmp_path, "level=traces", "input_key=question") == 0
    rule = next(iter(live.rules.values()))
    assert rule["type"] == "llm_as_judge"
    assert rule["code"]["variables"] == {"input": "input.question", "output": "output"}
    assert "{{input}}" in rule["code"]["messages"][1]["content"]


def test_an_unknown_project_is_a_clear_error(opik, model, tmp_path, capsys):
    assert create(model, tmp_path, "project=nope") == 2
    assert "Opik has no project named 'nope'" in capsys.readouterr().err


def test_a_builtin_metric_gets_no_rule_and_says_so(live, model, tmp_path, capsys):
    assert create(model, tmp_path, "metrics=[user_frustration_score]") == 0
    assert {r["name"] for r in live.rules.values()} == {
        "evalrun request_resolved",
        "evalrun honest_reporting",
    }
    assert "skipped    user_frustration_score" in capsys.readouterr().out
