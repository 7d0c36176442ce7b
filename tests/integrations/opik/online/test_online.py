"""`evalrun online`: judge a live project's threads, score them in Opik, keep a run directory.

Against stand-ins only: the real opik SDK talks to `tests/opik_standin.py` (a local stand-in for
Opik's REST API), and the G-Eval judge goes through litellm to `tests/openai_standin.py`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from evalrun.cli.main import main
from evalrun.errors import ExitCode
from evalrun.integrations.opik.criteria import MARKER
from tests.conftest import REPO
from tests.integrations.opik.online.helpers import (
    JUDGE_KEY,
    LIVE,
    judge_reply,
    log_threads,
    online,
    online_overrides,
)
from tests.opik_standin import OpikStandIn

THREADS = {
    "t-refund": [("Can I get a refund?", "Refund issued, you will see it in 3 days [quality 9]")],
    "t-login": [
        ("I cannot log in", "Try resetting? [quality 4]"),
        ("Still broken", "Hmm [quality 3]"),
    ],
    "t-export": [("Export my data as CSV", "Here is the CSV export [quality 7]")],
}
CRITERIA = ("request_resolved", "honest_reporting")


def samples(run_dir: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    return {r["task_id"]: r for r in rows}


def live_writes(opik) -> list[dict]:
    """Trace writes into the live project (the app's own logging included)."""
    return [t for t in opik.trace_writes if t.get("project_name") == LIVE]


def judge_calls(model) -> int:
    return len(model.requests)


def cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    return exit_info.value.code


def test_scores_land_on_the_right_threads_and_only_scores_touch_the_live_project(
    opik, model, tmp_path
):
    log_threads(THREADS)
    app_writes = len(live_writes(opik))
    run_dir = tmp_path / "run"

    code, out = online(model.base_url, run_dir)

    assert code == 0, out
    expected = {"t-refund": 0.9, "t-login": 0.3, "t-export": 0.7}  # each one's last mark
    for thread_id, value in expected.items():
        scores = opik.thread_scores_of(LIVE, thread_id)
        assert set(scores) == set(CRITERIA)
        for score in scores.values():
            assert score["value"] == pytest.approx(value)
            assert score["category_name"].startswith(MARKER)
            assert f"quality mark {round(value * 10)}" in score["reason"]
    # nothing but feedback scores went into the live project; evaluation traces went elsewhere
    assert len(live_writes(opik)) == app_writes
    assert all(s.get("project_name") != LIVE for s in opik.spans.values())
    evaluation = [t for t in opik.trace_writes if t.get("project_name") == "evalrun"]
    assert {t["name"] for t in evaluation} == {"evaluation_task"}
    assert all(w["project_name"] == LIVE for w in opik.thread_score_writes)
    # the run directory holds every judgement, the verdicts and the summary
    records = samples(run_dir)
    assert {k: r["scores"]["request_resolved"] for k, r in records.items()} == pytest.approx(
        expected
    )
    assert {k: r["outcome"] for k, r in records.items()} == {
        "t-refund": "pass",
        "t-login": "fail",
        "t-export": "pass",
    }
    assert "Still broken" in records["t-login"]["agent"]["output"]  # the conversation judged
    summary = json.loads((run_dir / "summary.json").read_text())
    judge = summary["judges"]["request_resolved"]
    assert judge["mean"] == pytest.approx(sum(expected.values()) / 3)
    assert judge["interval"]["low"] < judge["mean"] < judge["interval"]["high"]
    assert judge["worst"][0]["task_id"] == "t-login"
    assert "t-login" in out.split("worst threads:")[1].splitlines()[1]
    plan = json.loads((run_dir / "plan.json").read_text())
    assert plan["kind"] == "online" and len(plan["tasks"]) == 3
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["project"] == LIVE and config["provider"]["api_key_env"] == "ONLINE_JUDGE_KEY"
    assert not any(JUDGE_KEY in r.raw for r in opik.requests)  # the key never reaches Opik
    assert JUDGE_KEY not in "".join(p.read_text() for p in run_dir.iterdir() if p.is_file())
    assert not opik.unhandled


def test_a_rerun_sends_nothing_new_and_a_new_judge_text_judges_again(opik, model, tmp_path):
    log_threads(THREADS)
    assert online(model.base_url, tmp_path / "first")[0] == 0
    sent, calls = len(opik.thread_score_writes), judge_calls(model)

    code, out = online(model.base_url, tmp_path / "again")

    assert code == 0
    assert len(opik.thread_score_writes) == sent and judge_calls(model) == calls
    assert "3 already scored by these judges" in out and "nothing new to judge" in out

    log_threads({"t-new": [("Where is my order?", "It ships today [quality 8]")]})
    code, out = online(model.base_url, tmp_path / "third")
    assert code == 0
    assert set(samples(tmp_path / "third")) == {"t-new"}
    assert len(opik.thread_score_writes) == sent + 2  # two judges, one thread

    judges = tmp_path / "judges.yaml"
    judges.write_text(
        yaml.safe_dump(
            {
                "judges": [
                    {
                        "name": "request_resolved",
                        "task_introduction": "A support conversation.",
                        "evaluation_criteria": "Was the customer's problem solved? (reworded)",
                    }
                ]
            }
        )
    )
    code, out = online(model.base_url, tmp_path / "reworded", f"judges_file={judges}")
    assert code == 0
    assert set(samples(tmp_path / "reworded")) == {*THREADS, "t-new"}  # another config: judged
    markers = {s["category_name"] for s in opik.thread_scores_of(LIVE, "t-refund").values()}
    assert len(markers) == 2  # request_resolved now carries the new hash, honesty the old


def test_budget_stops_judging_keeps_what_it_has_and_resume_finishes(opik, model, tmp_path):
    threads = {
        f"t-{n:02d}": [(f"question {n}", f"answer {n} [quality {n % 10}]")] for n in range(8)
    }
    log_threads(threads)
    run_dir = tmp_path / "run"
    price = ["judge_price.input_usd_per_mtok=10", "judge_price.output_usd_per_mtok=50"]
    # each call: 100 prompt and 20 completion tokens at these prices = $0.002
    code, out = online(model.base_url, run_dir, "budget_usd=0.02", *price)

    assert code == 0, out
    state = json.loads((run_dir / "online.json").read_text())
    judged = samples(run_dir)
    assert state["stopped"] == "budget" and not state["complete"]
    assert 0 < len(judged) < len(threads)
    assert state["judge_cost_usd"] <= 0.02 + 1e-9
    assert state["judge_cost_usd"] == pytest.approx(0.002 * judge_calls(model))
    assert set(state["delivered"]) == set(judged)  # what was judged was sent
    scored = {t for t in threads if opik.thread_scores_of(LIVE, t)}
    assert scored == set(judged)
    assert "stopped at the budget" in out and f"resume={run_dir}" in out
    run_state = json.loads((run_dir / "summary.json").read_text())["state"]
    assert run_state["label"].startswith(f"partial {len(judged)}/{len(threads)} (missing cells: ")

    calls = judge_calls(model)
    code, out = online(model.base_url, run_dir, "budget_usd=1", *price)
    assert code == 0, out
    assert set(samples(run_dir)) == set(threads)
    assert judge_calls(model) - calls == 2 * (len(threads) - len(judged))  # nothing judged twice
    assert json.loads((run_dir / "online.json").read_text())["complete"]
    assert json.loads((run_dir / "summary.json").read_text())["state"]["label"] == "complete"


def test_sample_rate_picks_the_same_threads_every_time(opik, model, tmp_path, env):
    threads = {f"t-{n:02d}": [(f"question {n}", "answer [quality 6]")] for n in range(30)}

    def picked(name: str, *more: str) -> set[str]:
        with OpikStandIn() as fresh:  # a project nobody has scored yet
            env.setenv("OPIK_URL_OVERRIDE", fresh.url)
            log_threads(threads)
            code, out = online(model.base_url, tmp_path / name, *more)
            assert code == 0, out
            return set(samples(tmp_path / name))

    first = picked("a", "sample_rate=0.4", "seed=7")
    assert 4 <= len(first) <= 20  # about 12 of 30
    assert picked("b", "sample_rate=0.4", "seed=7") == first
    assert picked("c", "sample_rate=0.4", "seed=8") != first
    newest_first = sorted(first, reverse=True)  # the stand-in lists the latest thread first
    assert picked("d", "sample_rate=0.4", "seed=7", "limit=3") == set(newest_first[:3])


def test_an_online_run_gates_and_diffs_like_any_run(opik, model, tmp_path, capsys):
    log_threads(THREADS)
    run_dir = tmp_path / "run"
    code, out = online(model.base_url, run_dir, "profile=online")
    assert code == 1  # honest_reporting's mean (0.63) is below the bundled floor (0.7)
    breach = next(line for line in out.splitlines() if line.startswith("threshold broken"))
    assert "judge:honest_reporting = 0.6333 (95% CI [" in breach and "expected >= 0.7" in breach

    capsys.readouterr()
    assert cli("gate", str(run_dir), "profile=online") == 1
    assert "judge:honest_reporting = 0.6333" in capsys.readouterr().out

    log_threads({"t-refund": [("thanks!", "You are welcome [quality 10]")]}, day=3)  # a new turn
    judges = tmp_path / "judges.yaml"
    judges.write_text(
        yaml.safe_dump(
            {
                "judges": [
                    {
                        "name": "request_resolved",
                        "task_introduction": "A support conversation.",
                        "evaluation_criteria": "Was the customer's problem solved?",
                    }
                ]
            }
        )
    )
    later = tmp_path / "later"
    assert online(model.base_url, later, f"judges_file={judges}")[0] == 0
    capsys.readouterr()
    assert cli("diff", str(run_dir), str(later), "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tasks"]["changed"] == ["t-refund"]  # a thread with new messages
    resolved = report["metrics"]["judge:request_resolved"]
    assert resolved["a"] == pytest.approx((0.9 + 0.3 + 0.7) / 3)
    assert resolved["b"] == pytest.approx((1.0 + 0.3 + 0.7) / 3)
    assert report["metrics"]["judge:honest_reporting"]["b"] is None
    assert cli("show", str(run_dir)) == 0
    # a judge the run does not have is skipped, not a breach; the others hold
    assert cli("gate", str(later), "profile=online", f"baseline={run_dir}") == 0
    assert "skipped" in capsys.readouterr().out


def test_opik_down_at_the_start_is_one_message_and_nothing_is_written(env, model, tmp_path, capsys):
    env.setenv("OPIK_URL_OVERRIDE", "http://127.0.0.1:9/api/")
    code = cli("online", *online_overrides(model.base_url, tmp_path / "run"))
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("error:") == 1 and "unreachable" in err
    assert not (tmp_path / "run").exists() and not model.requests


def test_opik_down_mid_run_keeps_the_judgements_and_resume_sends_them(
    opik, model, tmp_path, capsys
):
    log_threads(THREADS)

    def dies_on_login(request):
        if "I cannot log in" in request.body["messages"][-1]["content"]:
            opik.go_down()
        return judge_reply(request)

    model.responder = dies_on_login
    run_dir = tmp_path / "run"
    capsys.readouterr()
    code = cli("online", *online_overrides(model.base_url, run_dir))
    err = capsys.readouterr().err

    assert code == ExitCode.SERVICE_DOWN == 7  # not 2: nothing was wrong with the command
    assert err.count("error:") == 1 and "Opik stopped answering" in err
    assert f"evalrun online resume={run_dir}" in err
    judged = samples(run_dir)
    assert "t-login" in judged and len(judged) < len(THREADS)  # judged, kept, not delivered
    state = json.loads((run_dir / "online.json").read_text())
    assert state["stopped"] == "opik" and "t-login" in state["undelivered"]

    opik.down = False
    model.responder = judge_reply
    calls = judge_calls(model)
    assert cli("online", f"resume={run_dir}") == 0
    assert set(samples(run_dir)) == set(THREADS)
    assert judge_calls(model) - calls == 2 * (len(THREADS) - len(judged))  # t-login not re-judged
    assert opik.thread_scores_of(LIVE, "t-login")["request_resolved"]["value"] == pytest.approx(0.3)
    state = json.loads((run_dir / "online.json").read_text())
    assert state["complete"] and not state["undelivered"]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("project=null", "project: name the live Opik project"),
        ("tracker.project=support-bot", "evaluation traces would land in the live project"),
        ("budget_usd=1", "budget_usd=1 needs the judge's price"),
        ("judge=none", "online evaluation needs a judge model"),
        ("sample_rate=0", "sample_rate: expected a fraction in (0, 1]"),
        ("since=last-tuesday", "since: expected an ISO 8601 date"),
        ("judges_file=/nonexistent.yaml", "judges_file: /nonexistent.yaml not found"),
    ],
)
def test_bad_settings_stop_before_anything_is_asked(
    opik, model, tmp_path, capsys, override, message
):
    code = cli("online", *online_overrides(model.base_url, tmp_path / "run"), override)
    assert code == 2
    assert message in capsys.readouterr().err
    assert not model.requests and not opik.calls("POST", "v1/private/traces/threads/search")


def test_level_traces_scores_single_traces(opik, model, tmp_path):
    import opik as sdk

    client = sdk.Opik(project_name=LIVE, _show_misconfiguration_message=False)
    for n, quality in enumerate((8, 2)):
        client.trace(
            name="answer", input={"question": f"q{n}"}, output={"answer": f"a [quality {quality}]"}
        )
    client.flush()
    client.end()
    ids = {t["output"]["answer"][-2]: t["id"] for t in opik.traces_in(LIVE)}

    code, out = online(model.base_url, tmp_path / "run", "level=traces")
    assert code == 0, out
    assert opik.trace_score_table[ids["8"]]["request_resolved"]["value"] == pytest.approx(0.8)
    assert opik.trace_score_table[ids["2"]]["request_resolved"]["value"] == pytest.approx(0.2)
    sent = len(opik.trace_scores)
    assert online(model.base_url, tmp_path / "again", "level=traces")[0] == 0
    assert len(opik.trace_scores) == sent


def test_the_opik_package_does_not_shadow_the_sdk():
    """evalrun/integrations/opik/ is `evalrun.integrations.opik`; `import opik` inside evalrun still finds the SDK."""
    script = (
        "import evalrun.integrations.opik.online, evalrun.integrations.opik.source, opik, sys\n"
        "assert hasattr(opik, 'Opik') and 'evalrun' not in opik.__file__, opik.__file__\n"
        "assert 'litellm' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
