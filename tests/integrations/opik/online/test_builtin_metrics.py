"""`metrics:` in the online config: opik's built-in conversation metrics beside the G-Eval judges.

Against stand-ins only: the real opik SDK talks to `tests/opik_standin.py` (a stand-in for Opik's
REST API), and opik's UserFrustrationMetric goes through litellm to `tests/openai_standin.py`,
which answers its prompts the way its JSON schema asks."""

from __future__ import annotations

import json

import pytest

from evalrun.cli.main import main
from evalrun.integrations.opik.criteria import BUILTIN_METRICS, MARKER
from tests.integrations.opik.online.helpers import (
    LIVE,
    judge_reply,
    log_threads,
    online,
    online_overrides,
)
from tests.openai_standin import Received, Reply, answer

THREADS = {
    "t-refund": [("Can I get a refund?", "Refund issued [quality 9]")],
    "t-login": [
        ("I cannot log in", "Try resetting? [quality 4]"),
        ("Still broken, this is useless", "Hmm [quality 3]"),
    ],
}
FRUSTRATION = "user_frustration_score"


def frustration_reply(request: Received) -> Reply:
    """opik's user-frustration prompts: a verdict on the window's last user message (frustrated
    when it says "useless"), then the reason for the score; anything else goes to G-Eval."""
    system = request.body["messages"][0]["content"]
    turns = request.body["messages"][-1]["content"]
    if "whether the LAST `user` message is showing" in system:
        last_user = turns.rsplit('"role": "user"', 1)[-1] if '"role": "user"' in turns else turns
        verdict = "yes" if "useless" in last_user else "no"
        return answer(json.dumps({"verdict": verdict, "reason": f"user said: {verdict}"}))
    if system.startswith("Below is a list of user frustrations"):
        return answer(json.dumps({"reason": "frustration read from the stand-in's verdicts"}))
    return judge_reply(request)


def test_a_builtin_metric_scores_each_thread_beside_the_judges(opik, model, tmp_path):
    model.responder = frustration_reply
    log_threads(THREADS)
    run_dir = tmp_path / "run"

    code, out = online(model.base_url, run_dir, f"metrics=[{FRUSTRATION}]")

    assert code == 0, out
    for thread_id, frustration in {"t-refund": 0.0, "t-login": 0.5}.items():
        scores = opik.thread_scores_of(LIVE, thread_id)
        assert set(scores) == {"request_resolved", "honest_reporting", FRUSTRATION}
        score = scores[FRUSTRATION]
        assert score["value"] == pytest.approx(frustration)
        assert score["category_name"].startswith(MARKER)
        assert "frustration read from the stand-in" in score["reason"]
    rows = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert {r["task_id"]: r["scores"][FRUSTRATION] for r in rows} == {
        "t-refund": 0.0,
        "t-login": 0.5,
    }
    # the same config again: every thread already carries this metric's score, nothing is sent
    calls = len(model.requests)
    code, out = online(model.base_url, tmp_path / "again", f"metrics=[{FRUSTRATION}]")
    assert code == 0, out
    assert len(model.requests) == calls


def test_an_unknown_metric_is_a_usage_error_listing_the_known_ones(env, model, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["online", *online_overrides(model.base_url, tmp_path / "run", "metrics=[nope]")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert "metrics[0]: unknown metric 'nope'" in err
    assert all(name in err for name in BUILTIN_METRICS)
    assert not model.requests and not (tmp_path / "run").exists()


def test_a_judges_file_may_carry_only_metrics_and_frustration_fails_when_high(tmp_path):
    from opik.evaluation.metrics.score_result import ScoreResult

    from evalrun.integrations.opik.criteria import Criterion, load_config
    from evalrun.integrations.opik.rundir import verdict
    from evalrun.integrations.opik.source import Judged

    judges = tmp_path / "judges.yaml"
    judges.write_text(f"metrics: [{FRUSTRATION}]\n")
    specs, metrics = load_config([{"name": "x"}], [], str(judges))  # the file replaces both
    assert (specs, metrics) == ([], [FRUSTRATION])
    criteria = [Criterion(None, "openai/gpt-4o-mini", metric=FRUSTRATION)]
    calm = Judged(text="", results=[ScoreResult(name=FRUSTRATION, value=0.2)])
    angry = Judged(text="", results=[ScoreResult(name=FRUSTRATION, value=0.8, reason="angry")])
    assert verdict(calm, criteria, 0.5)[0].value == "pass"
    outcome, reason = verdict(angry, criteria, 0.5)
    assert outcome.value == "fail" and reason == f"{FRUSTRATION} 0.80 > 0.5: angry"
