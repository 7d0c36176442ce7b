"""`agent=coder` end to end on real tasks, through its real HTTP request path.

No model API is reachable here, so `tests/openai_standin.py` - a local server speaking the
OpenAI chat-completions protocol - plays the model with scripted replies. Everything else is
what a user runs: the OpenAI client and its retries, pydantic-ai, the tools acting on a real
sandbox, the hidden oracle grading the result, samples.jsonl.
"""

from __future__ import annotations

import pytest

from evalrun import __version__
from tests.agents.conftest import evalrun_cli, run_eval
from tests.atif_check import checked_trajectories
from tests.openai_standin import Standin, answer, call, failure

TYPO = "003-error-message-typo"
FACTORIAL = "002-factorial-missing-return"

FIX_TYPO = [
    call(("ls", {"path": "."}), prompt_tokens=900, completion_tokens=12),
    call(("read", {"path": "settings.py"}), prompt_tokens=1000, completion_tokens=15),
    call(
        ("edit", {"path": "settings.py", "old": "Invlaid port", "new": "Invalid port"}),
        ("edit", {"path": "settings.py", "old": "Invlaid timeout", "new": "Invalid timeout"}),
        prompt_tokens=1800,
        completion_tokens=60,
        cached_tokens=1000,
    ),
    answer("Fixed the two misspelled messages in settings.py.", prompt_tokens=1900),
]


@pytest.fixture(autouse=True)
def openai_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-standin")


def coder(server: Standin, *extra: str) -> list[str]:
    return ["agent=coder", "provider=openai", f"provider.base_url={server.base_url}", *extra]


def test_right_edits_pass_the_oracle_and_the_record_matches_the_server(real_suite, tmp_path):
    suite = real_suite(TYPO)
    price = ["provider.price.input_usd_per_mtok=2", "provider.price.output_usd_per_mtok=8"]
    with Standin(list(FIX_TYPO)) as server:
        done = run_eval(suite, tmp_path / "run", *coder(server, *price))

    rec = done.only
    assert rec.outcome == "pass", rec.reason
    agent = rec.agent
    assert agent.error is None
    assert agent.output == "Fixed the two misspelled messages in settings.py."
    # The trajectory is the tool calls the server asked for, in order, with their results.
    sent = [(name, args) for reply in FIX_TYPO for name, args in reply.tool_calls]
    assert len(agent.trajectory) == len(sent) == 4
    pairs = zip(agent.trajectory, sent, strict=True)
    recorded = [(step.name, {k: step.args[k] for k in args}) for step, (_, args) in pairs]
    assert recorded == sent
    assert "settings.py" in agent.trajectory[0].result
    assert "Invlaid port number" in agent.trajectory[1].result
    assert agent.trajectory[2].result == "replaced 1 occurrence in settings.py"
    assert all(s.error is None and s.duration_s is not None for s in agent.trajectory)
    # Usage adds up what the server reported.
    served = server.completions
    assert agent.usage.requests == len(served) == 4
    assert agent.usage.input_tokens == sum(r.prompt_tokens for r in served) == 5600
    assert agent.usage.output_tokens == sum(r.completion_tokens for r in served)
    assert agent.usage.cache_read_tokens == 1000
    # Each model turn's tokens sit on the first call it asked for (the report shows them).
    stepped = [(s.input_tokens, s.output_tokens) for s in agent.trajectory if s.input_tokens]
    assert stepped == [(r.prompt_tokens, r.completion_tokens) for r in served if r.tool_calls]
    first = served[0]
    shown = f"{first.prompt_tokens:,} in / {first.completion_tokens:,} out tokens"
    assert f'<span class="tokens">{shown}</span>' in (done.run_dir / "report.html").read_text()
    expected = (4600 * 2 + 1000 * 2 + agent.usage.output_tokens * 8) / 1e6
    assert agent.usage.cost_usd == pytest.approx(expected)
    assert agent.usage.cost_source == "config price (provider.price)"
    # What went over the wire: the key from the environment, the prompt, the tool results.
    first, last = server.requests[0], server.requests[-1]
    assert first.headers["authorization"] == "Bearer sk-test-standin"
    assert first.body["model"] == "gpt-4o-mini"
    assert {t["function"]["name"] for t in first.body["tools"]} == {
        "read",
        "write",
        "edit",
        "bash",
        "grep",
        "ls",
    }
    user = [m for m in first.body["messages"] if m["role"] == "user"]
    assert user[0]["content"].startswith("Users keep sending us screenshots")
    tool_results = [m["content"] for m in last.body["messages"] if m["role"] == "tool"]
    assert tool_results[-2:] == ["replaced 1 occurrence in settings.py"] * 2
    # The report shows cost and cost-equivalent tokens; the logged config holds no secret.
    assert "cost-equivalent tokens" in done.console
    assert "sk-test-standin" not in (done.run_dir / "config.yaml").read_text()
    # trajectory.json: the sample in ATIF - the prompt, one step per tool call with its model
    # turn's tokens where known, the answer - and the run's totals.
    [document] = checked_trajectories(done.run_dir)
    assert document["agent"] == {
        "name": "coder",
        "version": __version__,
        "model_name": "gpt-4o-mini",
    }
    steps = document["steps"]
    assert steps[0]["source"] == "user" and steps[0]["message"] == user[0]["content"]
    assert [s["tool_calls"][0]["function_name"] for s in steps[1:-1]] == [
        "ls",
        "read",
        "edit",
        "edit",
    ]
    assert steps[2]["observation"]["results"][0]["content"] == agent.trajectory[1].result
    # Each model turn's figures, as pydantic-ai counted them, on the first step it asked for.
    metrics = [s.get("metrics") for s in steps[1:-1]]
    assert metrics[3] is None  # asked for by the same turn as the step before
    turns = [r for r in served if r.tool_calls]
    assert [
        (m["prompt_tokens"], m["completion_tokens"], m["cached_tokens"]) for m in metrics[:3]
    ] == [(r.prompt_tokens, r.completion_tokens, r.cached_tokens) for r in turns]
    assert sum(m["cost_usd"] for m in metrics[:3]) == pytest.approx((3700 * 2 + 87 * 8) / 1e6)
    ids = [s["tool_calls"][0]["tool_call_id"] for s in steps[1:-1]]
    assert ids == ["call_1_0", "call_2_0", "call_3_0", "call_3_1"]  # the API's own
    assert all(m["extra"]["counted_by"] == "pydantic-ai" for m in metrics[:3])
    assert steps[-1] == {"step_id": 6, "source": "agent", "message": agent.output}
    totals = document["final_metrics"]
    assert (totals["total_prompt_tokens"], totals["total_cached_tokens"]) == (5600, 1000)
    assert totals["total_cost_usd"] == pytest.approx(expected)


def test_wrong_edits_fail_the_oracle(real_suite, tmp_path):
    suite = real_suite(FACTORIAL)
    wrong = {
        "path": "mathutils.py",
        "old": "        result *= k\n",
        "new": "        result *= k\n        return result\n",  # returns inside the loop
    }
    script = [call(("read", {"path": "mathutils.py"})), call(("edit", wrong)), answer("Done.")]
    with Standin(script) as server:
        rec = run_eval(suite, tmp_path / "run", *coder(server)).only
    assert rec.outcome == "fail"
    assert rec.agent.error is None
    assert [s.name for s in rec.agent.trajectory] == ["read", "edit"]
    assert rec.verify_exit_code not in (0, None)


def test_a_model_that_fails_mid_run_is_recorded_and_the_sample_still_graded(real_suite, tmp_path):
    suite = real_suite(TYPO)
    script = [*FIX_TYPO[:3], failure(500, forever=True)]
    with Standin(script) as server:
        rec = run_eval(suite, tmp_path / "run", *coder(server, "agent.max_retries=1")).only
    # The edits were made before the server broke: the oracle grades the workspace as it is.
    assert rec.outcome == "pass"
    assert "HTTP 500" in rec.agent.error
    assert [s.name for s in rec.agent.trajectory] == ["ls", "read", "edit", "edit"]
    assert rec.agent.usage.requests == 3
    assert rec.agent.usage.input_tokens == 900 + 1000 + 1800
    # 3 good requests, then the failing one and its single retry.
    assert [r.status for r in server.served] == [200, 200, 200, 500, 500]


def test_a_model_that_fails_before_editing_fails_the_oracle_with_the_reason(real_suite, tmp_path):
    suite = real_suite(FACTORIAL)
    with Standin([failure(503, forever=True)]) as server:
        rec = run_eval(suite, tmp_path / "run", *coder(server, "agent.max_retries=0")).only
    assert rec.outcome == "fail"
    assert "HTTP 503" in rec.agent.error
    assert "HTTP 503" in rec.reason
    assert rec.agent.usage.requests == 0 and rec.agent.trajectory == []
    assert len(server.requests) == 1


def test_rate_limits_are_retried_then_the_run_goes_on(real_suite, tmp_path):
    suite = real_suite(TYPO)
    script = [failure(429), failure(429), *FIX_TYPO]
    with Standin(script) as server:
        rec = run_eval(suite, tmp_path / "run", *coder(server, "agent.max_retries=2")).only
    assert rec.outcome == "pass"
    assert rec.agent.error is None
    assert [r.status for r in server.served][:3] == [429, 429, 200]
    assert rec.agent.usage.requests == 4  # the rate-limited attempts are not completions


def test_max_steps_caps_model_requests(make_task, tmp_path):
    suite = make_task("001-answer", spec={"max_steps": 2}).parent
    script = [call(("ls", {"path": "."})) for _ in range(5)] + [answer("done")]
    with Standin(script) as server:
        rec = run_eval(suite, tmp_path / "run", *coder(server)).only
    assert rec.outcome == "fail"
    assert "max_steps" in rec.agent.error
    assert len(server.requests) == 2
    assert rec.agent.usage.requests == 2


def test_openrouter_reported_cost_is_used(real_suite, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-test")
    suite = real_suite(TYPO)
    script = [
        call(("read", {"path": "settings.py"}), cost=0.0011),
        answer("nothing to do", cost=0.0004),
    ]
    with Standin(script, extra={"provider": "StandinCloud"}) as server:  # as OpenRouter does
        overrides = [
            "agent=coder",
            "provider=openrouter",
            f"provider.base_url={server.base_url}",
            "provider.model=openai/gpt-4o-mini",
        ]
        rec = run_eval(suite, tmp_path / "run", *overrides).only
    assert rec.agent.usage.cost_usd == pytest.approx(0.0015)
    assert rec.agent.usage.cost_source == "provider-reported cost"
    assert server.requests[0].body["usage"] == {"include": True}
    assert server.requests[0].headers["authorization"] == "Bearer or-test"


def test_an_unpriced_model_has_no_cost_and_says_why(real_suite, tmp_path):
    suite = real_suite(TYPO)
    with Standin([answer("hello")]) as server:
        done = run_eval(suite, tmp_path / "run", *coder(server, "provider.model=my-finetune-7b"))
    usage = done.only.agent.usage
    assert usage.cost_usd is None
    assert usage.cost_source.startswith("unknown:") and "my-finetune-7b" in usage.cost_source
    assert usage.cost_equivalent_tokens == 100 + 5 * 20
    assert "cost unknown" in done.console


def test_the_cli_runs_the_coder_against_an_openai_compatible_url(real_suite, tmp_path):
    suite = real_suite(TYPO)
    run_dir = tmp_path / "run"
    with Standin(list(FIX_TYPO)) as server:
        proc = evalrun_cli(
            "agent=coder",
            "provider=openai",
            f"provider.base_url={server.base_url}",
            f"tasks_dir={suite}",
            f"run_dir={run_dir}",
            env={"OPENAI_API_KEY": "sk-cli"},
        )
    assert proc.returncode == 0, proc.stderr
    assert "pass@1 1.000" in proc.stdout
    assert server.requests[0].headers["authorization"] == "Bearer sk-cli"
    assert '"outcome":"pass"' in (run_dir / "samples.jsonl").read_text()


def test_an_agent_timeout_keeps_the_steps_and_tokens_already_spent(real_suite, tmp_path):
    suite = real_suite(TYPO)
    script = [
        call(("ls", {"path": "."}), prompt_tokens=900, completion_tokens=12),
        call(("bash", {"command": "sleep 60"}), prompt_tokens=1000, completion_tokens=20),
        answer("never reached"),
    ]
    with Standin(script) as server:
        overrides = coder(server, "agent.bash_timeout_s=120", "timeouts.agent_s=10")
        done = run_eval(suite, tmp_path / "run", *overrides)

    rec = done.only
    assert rec.timed_out_phase == "agent"
    assert rec.outcome == "fail"  # still graded
    assert rec.agent.error == "agent timed out after 10s"
    assert [step.name for step in rec.agent.trajectory] == ["ls"]
    assert rec.agent.usage.requests == 2
    assert rec.agent.usage.input_tokens == 1900
    assert rec.agent.usage.output_tokens == 32
