"""LLM judges: Opik's G-Eval through the real litellm request path.

No paid model is called: the judge talks to `tests/openai_standin.py`, a local OpenAI-compatible
server that replays scripted replies; Opik is `tests/opik_standin.py`.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from evalrun.cli.hydra import compose_config
from evalrun.errors import UsageError
from evalrun.integrations.opik.geval import GEvalJudge
from evalrun.models.records import AgentResult, Outcome, SampleRecord, ToolCall
from evalrun.run.judges import build_judge, judge_input
from evalrun.run.runner import run
from evalrun.tasks.loader import load_task
from tests.openai_standin import Standin, answer, failure
from tests.opik_standin import OpikStandIn

JUDGE_KEY = "sk-judge-secret-5555"
TIDY = {
    "name": "tidy",
    "task_introduction": "An agent was asked to write 42 into answer.txt.",
    "evaluation_criteria": "Reward a short, accurate final message.",
}


@pytest.fixture
def suite(make_task):
    make_task("001-judged", spec={"judges": [TIDY]})
    return make_task("002-plain").parent


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in ("EVAL_JUDGE_MODEL", "OPENAI_API_KEY", "OPIK_URL_OVERRIDE", "OPIK_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def evaluate(suite: Path, run_dir: Path, base_url: str, *overrides: str) -> int:
    cfg = compose_config(
        [
            f"tasks_dir={suite}",
            f"run_dir={run_dir}",
            "trials=2",
            "concurrency=1",
            "judge=default",
            "judge.retry_backoff_s=0",
            f"provider.base_url={base_url}",
            "provider.model=standin-model",
            "provider.api_key_env=JUDGE_TEST_KEY",
            *overrides,
        ]
    )
    return run(cfg, Console(file=io.StringIO(), width=200))


def records(run_dir: Path) -> dict[tuple[str, int], dict]:
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    return {(r["task_id"], r["trial"]): r for r in map(json.loads, lines)}


def test_judge_scores_and_reasons_land_in_samples_and_in_opik(suite, tmp_path, clean_env):
    clean_env.setenv("JUDGE_TEST_KEY", JUDGE_KEY)
    script = [
        answer("1. Check the message. 2. Score it."),  # G-Eval's chain of thought, asked once
        answer('{"score": 8, "reason": "short and accurate"}'),
        answer('{"score": 6, "reason": "a little wordy"}'),
    ]
    run_dir = tmp_path / "run"
    with Standin(script) as model, OpikStandIn() as opik:
        clean_env.setenv("OPIK_URL_OVERRIDE", opik.url)
        assert evaluate(suite, run_dir, model.base_url, "tracker=opik") == 0
        assert len(model.requests) == 3
        assert {r.headers["authorization"] for r in model.requests} == {f"Bearer {JUDGE_KEY}"}
        judged_traces = [t for t in opik.traces.values() if t["name"] == "001-judged"]
        opik_scores = {
            (opik.scores_of(t["id"])["tidy"]["value"], opik.scores_of(t["id"])["tidy"]["reason"])
            for t in judged_traces
        }

    got = records(run_dir)
    judged = [got[("001-judged", 0)], got[("001-judged", 1)]]
    assert {(r["scores"]["tidy"], r["judge_reasons"]["tidy"]) for r in judged} == {
        (0.8, "short and accurate"),
        (0.6, "a little wordy"),
    }
    assert all(r["outcome"] == "pass" for r in got.values())  # judges never touch the verdict
    assert got[("002-plain", 0)]["scores"] == {} and got[("002-plain", 1)]["scores"] == {}
    assert opik_scores == {(0.8, "short and accurate"), (0.6, "a little wordy")}
    for name in ("samples.jsonl", "config.yaml", "opik.json"):
        assert JUDGE_KEY not in (run_dir / name).read_text()


def test_a_failed_judge_is_a_missing_score_with_its_reason(suite, tmp_path, clean_env):
    run_dir = tmp_path / "run"
    with Standin([failure(500, forever=True)]) as model:
        clean_env.setenv("JUDGE_TEST_KEY", JUDGE_KEY)
        assert evaluate(suite, run_dir, model.base_url, "ids=001-judged", "trials=1") == 0
    [record] = records(run_dir).values()
    assert record["outcome"] == "pass"
    assert record["scores"] == {"tidy": None}
    reason = record["judge_reasons"]["tidy"]
    assert "failed after 2 attempt(s)" in reason and "500" in reason


def test_judge_none_leaves_task_judges_unscored(suite, tmp_path, clean_env):
    run_dir = tmp_path / "run"
    cfg = compose_config([f"tasks_dir={suite}", f"run_dir={run_dir}"])
    assert run(cfg, Console(file=io.StringIO())) == 0
    assert all(r["scores"] == {} for r in records(run_dir).values())


def test_a_missing_judge_key_stops_the_run_before_it_starts(suite, tmp_path, clean_env):
    run_dir = tmp_path / "run"
    cfg = compose_config([f"tasks_dir={suite}", f"run_dir={run_dir}", "judge=gpt_4o_mini"])
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        run(cfg, Console(file=io.StringIO()))
    assert not (run_dir / "samples.jsonl").exists()


@pytest.mark.parametrize(
    ("overrides", "model", "base_url", "key_env"),
    [
        (["provider=gemini"], "gemini/gemini-2.5-flash", None, "GEMINI_API_KEY"),
        (
            ["provider=openrouter"],
            "openrouter/google/gemini-2.5-flash",
            "https://openrouter.ai/api/v1",
            "OPENROUTER_API_KEY",
        ),
        (["provider=openai"], "openai/gpt-4o-mini", "https://api.openai.com/v1", "OPENAI_API_KEY"),
        (
            [
                "provider=modal",
                "provider.base_url=https://x--serve.modal.run/v1",
                "provider.model=Q",
            ],
            "openai/Q",
            "https://x--serve.modal.run/v1",
            None,
        ),
    ],
)
def test_the_default_judge_follows_the_provider(clean_env, overrides, model, base_url, key_env):
    judge = build_judge(compose_config(["judge=default", *overrides]).judge)
    assert (judge.model, judge.base_url, judge.api_key_env) == (model, base_url, key_env)


def test_modal_judge_sends_the_proxy_auth_headers(clean_env):
    cfg = compose_config(["judge=default", "provider=modal", "provider.model=Q"])
    assert build_judge(cfg.judge).headers_env == {
        "Modal-Key": "MODAL_KEY",
        "Modal-Secret": "MODAL_SECRET",
    }


def test_eval_judge_model_replaces_the_model_and_keeps_keys_with_their_vendor(clean_env):
    clean_env.setenv("EVAL_JUDGE_MODEL", "openai/gpt-4.1-mini")
    cfg = compose_config(["judge=gpt_4o_mini"])
    judge = build_judge(cfg.judge)
    assert (judge.model, judge.api_key_env) == ("openai/gpt-4.1-mini", "OPENAI_API_KEY")

    clean_env.setenv("EVAL_JUDGE_MODEL", "openrouter/anthropic/claude-3.5-haiku")
    judge = build_judge(compose_config(["judge=gpt_4o_mini"]).judge)
    assert judge.model == "openrouter/anthropic/claude-3.5-haiku"
    assert judge.api_key_env is None  # the OpenAI key is never sent to another vendor

    judge = build_judge(compose_config(["judge=default", "provider=gemini"]).judge)
    assert (judge.model, judge.base_url) == ("openrouter/anthropic/claude-3.5-haiku", None)


def test_the_judge_sees_prompt_message_and_what_the_agent_wrote(suite):
    task = load_task(suite / "001-judged")
    record = SampleRecord(
        run_id="r",
        task_id=task.id,
        fingerprint=task.fingerprint,
        trial=0,
        outcome=Outcome.failed,
        started_at=0.0,
        finished_at=1.0,
        agent=AgentResult(
            output="I wrote 42.",
            trajectory=[
                ToolCall(name="read", args={"path": "README.md"}, result="Put the answer..."),
                ToolCall(name="write", args={"path": "answer.txt", "content": "42"}),
                ToolCall(name="edit", args={"path": "notes.md", "old": "a", "new": "b"}),
            ],
        ),
    )
    text = judge_input(task, record)
    assert "Write the number 42 into answer.txt." in text and "I wrote 42." in text
    files = text.split("## Files the agent wrote or edited (from its tool calls)\n")[1]
    assert files.startswith("- answer.txt\n- notes.md\n")
    assert '"content": "42"' in text


def test_the_judge_sees_the_real_workspace_diff(suite, tmp_path, clean_env):
    """An agent that reports no tool calls (a shell command) is judged on what it changed."""
    clean_env.setenv("JUDGE_TEST_KEY", JUDGE_KEY)
    script = [answer("1. Read the diff. 2. Score it."), answer('{"score": 9, "reason": "ok"}')]
    run_dir = tmp_path / "run"
    agent = ["agent=command", "agent.cmd='echo 42 > answer.txt; rm README.md; echo done'"]
    with Standin(script) as model:
        code = evaluate(suite, run_dir, model.base_url, "ids=001-judged", "trials=1", *agent)
        assert code == 0
        sent = json.dumps([r.body for r in model.requests])
    [record] = records(run_dir).values()
    changes = {f["path"]: f for f in record["workspace_diff"]["files"]}
    assert changes["answer.txt"]["change"] == "added" and "+42" in changes["answer.txt"]["diff"]
    assert changes["README.md"]["change"] == "removed"
    assert "What the agent changed in the workspace (1 added, 1 removed)" in sent
    assert "+++ b/answer.txt" in sent and "-Put the answer in answer.txt" in sent


def test_harness_errors_are_not_judged(suite):
    task = load_task(suite / "001-judged")
    judge = GEvalJudge(name="x", model="openai/never-called", base_url="http://127.0.0.1:9/v1")
    record = SampleRecord(
        run_id="r",
        task_id=task.id,
        fingerprint=task.fingerprint,
        trial=0,
        outcome=Outcome.error,
        reason="sandbox failed",
        started_at=0.0,
        finished_at=1.0,
    )
    assert asyncio.run(judge.judge(task, record)) is record
