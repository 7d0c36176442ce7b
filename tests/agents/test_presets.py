"""The agent CLI presets end to end: real CLIs, real sandboxes, a stand-in model behind the gateway.

Each agent is the real, pinned CLI from the host cache (installed on first use, as a user's run
would); its model is a local stand-in of the API it speaks (tests/api_standins.py), reached only
through evalrun's gateway over the sample's unix socket, with the sandbox at `network: none`. The
stand-in's scripted turns make the agent grep its sandbox for the provider key, fix a bundled
task with one shell command, then finish. No live provider is called by these tests.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from evalrun.agents.presets.aider import Aider
from evalrun.agents.presets.claude_code import ClaudeCode
from evalrun.agents.presets.codex import Codex
from evalrun.agents.presets.gemini_cli import GeminiCli
from evalrun.agents.presets.mini_swe_agent import MiniSweAgent
from evalrun.agents.presets.opencode import Opencode
from evalrun.config.pricing import litellm_price
from evalrun.config.providers import Provider
from evalrun.errors import UsageError
from evalrun.models.atif import Agent as AtifAgent
from evalrun.models.records import AgentResult, SampleRecord
from evalrun.report.html import step_view
from evalrun.run.trial import Limits, Trial
from evalrun.rundir.trajectory import Session, trajectory_of
from evalrun.sandbox.local import LocalBackend
from evalrun.tasks.loader import load_task
from tests.agents.conftest import FIXTURES, run_eval
from tests.api_standins import ApiStandin, Turn, say, tool
from tests.atif_check import checked_trajectories, schema_problems
from tests.conftest import REPO
from tests.sandbox.conftest import backend_params, build_backend

TYPO = "003-error-message-typo"
FIX = "sed -i s/Invlaid/Invalid/g settings.py"
SECRET = "sk-evalrun-test-0f9d8c7b6a5e4d3c"
KEY_VAR = "EVALRUN_TEST_PROVIDER_KEY"
# Looks for the key everywhere the agent can write or read config, and in every process's
# environment; the key is spelt in two halves so this command line never contains it whole.
PROBE = (
    'k="sk-evalrun-test-""0f9d8c7b6a5e4d3c"; '
    'if env | grep -q "$k" || cat /proc/[0-9]*/environ 2>/dev/null | grep -aq "$k" || '
    "grep -rlsa --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr "
    '"$k" / >/dev/null 2>&1; then echo key-found; else echo key-absent; fi'
)

# agent -> (tool turns for the probe and the fix, last turn, model, base-url suffix)
SCRIPTS = {
    "claude_code": (
        [tool("Bash", command=PROBE, description="probe"), tool("Bash", command=FIX)],
        say("Fixed the typo."),
        "claude-sonnet-4-5",
        "",
    ),
    "codex": (
        [tool("exec_command", cmd=PROBE), tool("exec_command", cmd=FIX)],
        say("Fixed the typo."),
        "gpt-4o-mini",
        "/v1",
    ),
    "mini_swe_agent": (
        [tool("bash", command=PROBE), tool("bash", command=FIX)],
        tool("bash", command="echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
        "gpt-4o-mini",
        "/v1",
    ),
}


# What the report prints beside a run's first step: the tokens of the model call that asked for
# it (the stand-in's default 100 prompt / 20 output), as far as the agent's agent log tells them.
FIRST_STEP_TOKENS = {
    "claude_code": "100 in tokens",
    "codex": None,
    "mini_swe_agent": "100 in / 20 out tokens",
}


def overrides(agent: str, backend: str, url: str, model: str, *extra: str) -> list[str]:
    return [
        f"agent={agent}",
        f"sandbox={backend}",
        f"provider.base_url={url}",
        f"provider.model={model}",
        f"provider.api_key_env={KEY_VAR}",
        *extra,
    ]


def run_dir_text(run_dir: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file())


@pytest.mark.parametrize("backend", backend_params(["docker", "bwrap"]))
@pytest.mark.parametrize("agent", list(SCRIPTS))
def test_agent_fixes_a_task_through_the_gateway_with_no_key_inside(
    agent, backend, request, real_suite, tmp_path, monkeypatch
):
    build_backend(backend, request)  # skip here, or fail in CI, when the engine is missing
    monkeypatch.setenv(KEY_VAR, SECRET)
    steps, last, model, suffix = SCRIPTS[agent]
    with ApiStandin([*steps, last], model=model) as server:
        done = run_eval(
            real_suite(TYPO),
            tmp_path / "run",
            *overrides(agent, backend, server.url + suffix, model),
        )
    rec = done.only
    assert rec.outcome == "pass", (rec.reason, rec.agent.error)
    trajectory = rec.agent.trajectory
    assert len(trajectory) >= 2
    assert "key-absent" in trajectory[0].result, trajectory[0]
    assert "Invlaid" in str(trajectory[1].args)
    page = (done.run_dir / "report.html").read_text()
    shown = FIRST_STEP_TOKENS[agent]
    assert (shown is None) == ('<span class="tokens">' not in page)
    assert shown is None or f'<span class="tokens">{shown}</span>' in page
    totals = server.totals()
    usage = rec.agent.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (
        totals["requests"],
        totals["input_tokens"],
        totals["output_tokens"],
    )
    price = litellm_price(model)
    assert price is not None
    assert usage.cost_usd == pytest.approx(
        price.cost(totals["input_tokens"], totals["output_tokens"])
    )
    assert usage.cost_source == "metered by evalrun's gateway"
    assert all(
        r.headers.get("x-api-key", r.headers.get("authorization", "")).endswith(SECRET)
        for r in server.requests
        if r.method == "POST"
    )
    assert SECRET not in run_dir_text(done.run_dir)
    # trajectory.json (ATIF): the CLI's tool calls, and the gateway's meter as the totals.
    [document] = checked_trajectories(done.run_dir)
    assert document["agent"]["name"] == agent and document["agent"]["model_name"] == model
    called = [s["tool_calls"][0]["arguments"] for s in document["steps"] if "tool_calls" in s]
    assert called == [step.args for step in trajectory]
    final = document["final_metrics"]
    assert (final["total_prompt_tokens"], final["total_completion_tokens"]) == (
        totals["input_tokens"],
        totals["output_tokens"],
    )
    assert final["total_cost_usd"] == pytest.approx(usage.cost_usd)
    assert final["extra"]["cost_source"] == "metered by evalrun's gateway"
    # Each tool step carries its model call as the gateway metered it (tokens and cost), where
    # the agent's log keeps the call's API id (codex's does not: no per-step figures).
    tool_steps = [s for s in document["steps"] if "tool_calls" in s]
    if agent == "codex":
        assert all("metrics" not in s for s in tool_steps)
    else:
        assert [s["tool_calls"][0]["tool_call_id"] for s in tool_steps] == [
            step.call_id for step in trajectory
        ]
        one_turn = {"prompt_tokens": 100, "completion_tokens": 20, "cached_tokens": 0}
        for step in tool_steps:
            assert {k: step["metrics"][k] for k in one_turn} == one_turn
            assert step["metrics"]["cost_usd"] == pytest.approx(price.cost(100, 20))


@pytest.mark.parametrize("backend", backend_params(["bwrap"]))
def test_aider_fixes_a_task_through_the_gateway_in_its_whole_file_format(
    backend, request, real_suite, tmp_path, monkeypatch
):
    """aider edits by reply text, not tool calls: for gpt-4o-mini, the whole new file in a fenced
    block under its name. The real CLI applies the stand-in's reply; its chat history becomes an
    `edit` step, and trajectory.json holds it with the gateway's meter as the totals."""
    build_backend(backend, request)
    monkeypatch.setenv(KEY_VAR, SECRET)
    suite = real_suite(TYPO)
    fixed = (suite / TYPO / "setup" / "settings.py").read_text().replace("Invlaid", "Invalid")
    reply = say(f"I fixed both messages.\n\nsettings.py\n```python\n{fixed}```\n")
    with ApiStandin([reply, Turn(text="Done.", forever=True)], model="gpt-4o-mini") as server:
        done = run_eval(
            suite, tmp_path / "run", *overrides("aider", backend, server.url + "/v1", "gpt-4o-mini")
        )
    rec = done.only
    assert rec.outcome == "pass", (rec.reason, rec.agent.error)
    assert [(step.name, step.args) for step in rec.agent.trajectory] == [
        ("edit", {"path": "settings.py"})
    ]
    assert SECRET not in run_dir_text(done.run_dir)
    [document] = checked_trajectories(done.run_dir)
    assert document["agent"]["name"] == "aider"
    edits = [s["tool_calls"][0] for s in document["steps"] if "tool_calls" in s]
    assert [(c["function_name"], c["arguments"]) for c in edits] == [
        ("edit", {"path": "settings.py"})
    ]
    totals = server.totals()
    assert document["final_metrics"]["total_prompt_tokens"] == totals["input_tokens"]
    assert document["final_metrics"]["extra"]["cost_source"] == "metered by evalrun's gateway"


def test_a_run_at_its_usd_cap_starts_no_new_sample_and_says_so(real_suite, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_VAR, SECRET)
    suite = real_suite(TYPO, "001-fizzbuzz-off-by-one")
    script = [Turn(calls=[("Bash", {"command": FIX})], input_tokens=400_000), say("done")]
    with ApiStandin(script * 2, model="claude-sonnet-4-5") as server:
        done = run_eval(
            suite,
            tmp_path / "run",
            *overrides("claude_code", "local", server.url, "claude-sonnet-4-5"),
            "budget.run_usd=0.5",
        )
    assert done.exit_code == 6
    assert "run stopped: budget.run_usd" in done.console
    rec = done.only  # the second task never started
    assert rec.outcome == "error" and rec.reason.startswith("run budget reached"), rec.reason
    assert rec.attempts == 1
    assert len(server.completed) == 1


def _provider(url: str) -> Provider:
    return Provider("anthropic", "claude-sonnet-4-5", url, api="anthropic", api_key_env=KEY_VAR)


def test_a_missing_cli_stops_preflight_and_is_an_error_on_a_sample(monkeypatch):
    monkeypatch.setenv(KEY_VAR, SECRET)
    backend = LocalBackend()
    with ApiStandin([say("never")]) as server:
        agent = ClaudeCode("2.1.332", _provider(server.url))
        missing = lambda root: f"{root}/not-here/claude"  # noqa: E731
        monkeypatch.setattr(agent, "cli", missing)
        with pytest.raises(UsageError, match="agent CLI missing"), agent.prepared(backend):
            pass
        monkeypatch.undo()
        monkeypatch.setenv(KEY_VAR, SECRET)
        task = load_task(REPO / "tasks" / TYPO)
        with agent.prepared(backend):
            monkeypatch.setattr(agent, "cli", missing)
            rec = asyncio.run(Trial(task, 0, agent, Limits(), run_id="cli").run(backend))
    assert rec.outcome == "error"
    assert rec.reason.startswith("agent CLI missing"), rec.reason
    assert "evalrun agents install claude_code" in rec.reason


def test_a_provider_rate_limit_outliving_retries_is_an_error_named_so(monkeypatch):
    monkeypatch.setenv(KEY_VAR, SECRET)
    backend = LocalBackend()
    with ApiStandin([Turn(status=429, text="rate limited", forever=True)]) as server:
        agent = ClaudeCode("2.1.332", _provider(server.url), env={"CLAUDE_CODE_MAX_RETRIES": "0"})
        task = load_task(REPO / "tasks" / TYPO)
        with agent.prepared(backend):
            rec = asyncio.run(Trial(task, 0, agent, Limits(), run_id="429").run(backend))
    assert rec.outcome == "error"
    assert "rate limit (HTTP 429)" in rec.reason, rec.reason


@pytest.mark.parametrize(
    ("preset", "provider"),
    [
        (GeminiCli, Provider("google", "gemini-2.5-flash", "{url}", api="gemini-native")),
        (Opencode, Provider("openai", "gpt-4o-mini", "{url}/v1", api="openai")),
        (Aider, Provider("openai", "gpt-4o-mini", "{url}/v1", api="openai")),
    ],
    ids=["gemini_cli", "opencode", "aider"],
)
@pytest.mark.parametrize("backend", backend_params(["bwrap"]))
def test_the_other_presets_install_and_answer_at_their_pinned_version(
    preset, provider, backend, request
):
    """Installed from the registry (or the cache), then proven inside a sandbox: the CLI answers
    --version with the pinned version and the gateway answers through the forwarder."""
    build_backend(backend, request)  # skip here, or fail in CI, without bubblewrap
    from evalrun.sandbox.bwrap.backend import BwrapBackend

    sandbox = BwrapBackend(memory_mb=None)  # node reserves more address space than the test cap
    versions = {"gemini_cli": "0.61.0", "opencode": "1.18.33", "aider": "0.86.2"}
    with ApiStandin([]) as server:
        provider.base_url = provider.base_url.format(url=server.url)
        agent = preset(versions[preset.name], provider)
        with agent.prepared(sandbox):
            assert agent._install is not None and agent._install.ready


LOGS = FIXTURES / "logs"


def test_gemini_cli_log_converts_to_the_common_trajectory():
    converted = GeminiCli("0", _provider("x")).convert((LOGS / "gemini_cli.jsonl").read_text())
    assert [(s.name, s.args["command"]) for s in converted.trajectory] == [
        ("run_shell_command", "echo fixed > out5.txt")
    ]
    assert converted.trajectory[0].error is None
    assert converted.output == "Done." and not converted.notes


def test_opencode_log_converts_to_the_common_trajectory():
    converted = Opencode("0", _provider("x")).convert((LOGS / "opencode.jsonl").read_text())
    [step] = converted.trajectory
    assert (step.name, step.args["command"], step.result) == (
        "bash",
        "echo fixed > out4.txt",
        "(no output)",
    )
    assert step.duration_s == pytest.approx(0.096)
    assert converted.output == "Done."


def test_aider_chat_history_converts_to_the_common_trajectory():
    converted = Aider("0", _provider("x")).convert((LOGS / "aider.md").read_text())
    assert [(s.name, s.args) for s in converted.trajectory] == [("edit", {"path": "settings.py"})]
    assert converted.output.startswith("I will fix the typo.")
    assert 'print("Invalid")' in converted.output


# Logs recorded from the real pinned CLIs (host, against tests/api_standins.py) whose model calls
# reported prompt/output tokens of 1200/35 (1000 of the prompt cached), 1500/48, then 1700/12.
# A format that gives per-step usage puts each call's tokens on its first step; one that gives
# only run totals (codex, gemini_cli) or rounded figures (aider) leaves every step's unknown.
STEP_TOKENS = [
    (ClaudeCode, "claude_code.jsonl", [(1200, None), (1500, None)]),  # output: a placeholder
    (Opencode, "opencode_steps.jsonl", [(1200, 35), (1500, 48)]),  # the 1700 call asked no tool
    (MiniSweAgent, "mini_swe_agent.json", [(1200, 35), (1500, 48), (1700, 12)]),
    (Codex, "codex.jsonl", [(None, None), (None, None)]),
    (GeminiCli, "gemini_cli.jsonl", [(None, None)]),
    (Aider, "aider.md", [(None, None)]),
]


@pytest.mark.parametrize(("preset", "log", "expected"), STEP_TOKENS, ids=lambda v: str(v))
def test_each_step_carries_the_tokens_its_model_call_reported(preset, log, expected):
    converted = preset("0", _provider("x")).convert((LOGS / log).read_text())
    assert [(s.input_tokens, s.output_tokens) for s in converted.trajectory] == expected


def test_the_report_shows_a_preset_step_as_it_shows_a_coder_step():
    steps = Opencode("0", _provider("x")).convert((LOGS / "opencode_steps.jsonl").read_text())
    assert step_view(steps.trajectory[0]).tokens == "1,200 in / 35 out tokens"
    steps = ClaudeCode("0", _provider("x")).convert((LOGS / "claude_code.jsonl").read_text())
    assert step_view(steps.trajectory[1]).tokens == "1,500 in tokens"  # no made-up 0 out
    steps = Codex("0", _provider("x")).convert((LOGS / "codex.jsonl").read_text())
    assert step_view(steps.trajectory[0]).tokens == ""


def test_agents_list_names_every_preset_and_install_refuses_an_unknown_one():
    from tests.agents.conftest import evalrun_cli

    listed = evalrun_cli("agents", "list")
    assert listed.returncode == 0, listed.stderr
    for name in ("claude_code", "codex", "gemini_cli", "opencode", "mini_swe_agent", "aider"):
        assert name in listed.stdout
    refused = evalrun_cli("agents", "install", "claude_kode")
    assert refused.returncode == 2
    assert "'claude_kode' is not an agent preset" in refused.stderr


def test_a_preset_refuses_a_provider_that_speaks_another_api(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    agent = ClaudeCode(
        "2.1.332",
        Provider("openai", "gpt-4o", "https://x/v1", api="openai", api_key_env="OPENAI_API_KEY"),
    )
    with pytest.raises(UsageError, match="agent=claude_code speaks anthropic"):
        agent.preflight()


@pytest.mark.parametrize(("preset", "log", "expected"), STEP_TOKENS, ids=lambda v: str(v))
def test_each_presets_real_log_makes_a_valid_atif_trajectory(preset, log, expected):
    converted = preset("0", _provider("x")).convert((LOGS / log).read_text())
    result = AgentResult(output=converted.output, trajectory=converted.trajectory)
    record = SampleRecord(
        run_id="r", task_id="t", fingerprint="f", trial=0, outcome="pass", agent=result,
        started_at=0.0, finished_at=1.0,
    )  # fmt: skip
    agent = AtifAgent(name=preset.name, version="0", model_name="m")
    document = trajectory_of(record, Session(agent, {"t": "the prompt"})).to_json()
    assert schema_problems(document) == []
    steps = document["steps"]
    assert [s["tool_calls"][0]["function_name"] for s in steps[1:-1]] == [
        s.name for s in converted.trajectory
    ]
    tokens = [s.get("metrics", {}) for s in steps[1:-1]]
    assert [(t.get("prompt_tokens"), t.get("completion_tokens")) for t in tokens] == expected
    assert steps[-1]["message"] == converted.output
