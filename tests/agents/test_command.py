"""`agent=command` end to end: a small agent CLI run inside the sandbox on a real task."""

from __future__ import annotations

import shlex
import sys

import pytest

from evalrun.agents.command import CommandAgent, read_trajectory, read_usage
from evalrun.config.pricing import litellm_price
from evalrun.errors import UsageError
from tests.agents.conftest import FIXTURES, evalrun_cli, run_eval
from tests.atif_check import checked_trajectories

TYPO = "003-error-message-typo"
CLI = (
    f"{shlex.quote(sys.executable)} {FIXTURES / 'fake_agent_cli.py'} --prompt-file {{prompt_file}}"
)


def command(cmd: str, *extra: str) -> list[str]:
    quoted = cmd.replace('"', '\\"')  # a Hydra double-quoted override value
    return ["agent=command", f'agent.cmd="{quoted}"', *extra]


def test_a_cli_that_fixes_the_task_passes_with_its_trajectory_usage_and_cost(real_suite, tmp_path):
    rec = run_eval(real_suite(TYPO), tmp_path / "run", *command(CLI)).only
    assert rec.outcome == "pass", rec.reason
    assert rec.agent.output == "Fixed the Invlaid typos in settings.py.\n"
    assert rec.agent.error is None
    assert [s.name for s in rec.agent.trajectory] == ["read_prompt", "read", "edit"]
    assert rec.agent.trajectory[0].result == "Users keep sending us screenshots of erro"[:40]
    assert rec.agent.trajectory[2].args == {
        "path": "settings.py",
        "old": "Invlaid",
        "new": "Invalid",
    }
    usage = rec.agent.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (3, 4200, 310)
    assert usage.cache_read_tokens == 2000
    assert usage.cost_usd == 0.0125 and usage.cost_source == "reported by the agent"


def test_a_cli_with_wrong_edits_fails(real_suite, tmp_path):
    rec = run_eval(real_suite(TYPO), tmp_path / "run", *command(CLI + " --mode wrong")).only
    assert rec.outcome == "fail"
    assert rec.agent.error is None


def test_what_a_cli_says_on_stderr_is_kept_when_it_exits_0(real_suite, tmp_path):
    """A CLI's warnings (a deprecated flag, a retried request) used to vanish with exit 0."""
    cli = f"echo 'warning: retried the model call' >&2; {CLI}"
    done = run_eval(real_suite(TYPO), tmp_path / "run", *command(cli))
    rec = done.only
    assert rec.outcome == "pass" and rec.agent.error is None
    assert rec.agent.stderr == "warning: retried the model call\n"
    logs = list((done.run_dir / "samples").rglob("agent.log"))
    assert len(logs) == 1
    assert "--- stderr ---\nwarning: retried the model call" in logs[0].read_text()


def test_a_crashing_cli_is_recorded_and_still_graded(real_suite, tmp_path):
    rec = run_eval(real_suite(TYPO), tmp_path / "run", *command(CLI + " --mode crash")).only
    assert rec.outcome == "fail"
    assert rec.agent.error.startswith("command exited 1: agent crashed: out of credits")
    assert [s.name for s in rec.agent.trajectory] == ["read_prompt", "read"]
    assert rec.agent.usage.cost_usd is None
    assert rec.agent.usage.cost_source == "unknown: the command wrote no usage file"


def test_usage_without_cost_is_priced_from_the_model_it_names(real_suite, tmp_path):
    cli = CLI + " --model gpt-4o-mini"
    usage = run_eval(real_suite(TYPO), tmp_path / "run", *command(cli)).only.agent.usage
    price = litellm_price("gpt-4o-mini")
    assert price is not None
    assert usage.cost_usd == pytest.approx(price.cost(4200, 310, 2000))
    assert usage.cost_source == "litellm price for 'gpt-4o-mini'"


def test_the_prompt_reaches_the_cli_as_a_file_never_through_the_shell(make_task, tmp_path):
    canary = tmp_path / "pwned"
    prompt = f"Fix it. $(touch {canary}) `touch {canary}` '; touch {canary}; ' \"quoted\" {{x}}"
    suite = make_task(spec={"prompt": prompt}).parent
    cmd = 'cat {prompt_file}; echo; echo "$EVALRUN_PROMPT_FILE"; echo {workdir}'
    rec = run_eval(suite, tmp_path / "run", *command(cmd)).only
    shown, prompt_path, workdir = rec.agent.output.rsplit("\n", 3)[:3]
    assert shown == prompt
    assert not canary.exists()
    assert not prompt_path.startswith(workdir + "/")  # the prompt file is outside the workspace


def test_pass_env_hands_named_host_variables_to_the_cli_and_nothing_else(
    make_task, tmp_path, monkeypatch
):
    monkeypatch.setenv("FAKE_AGENT_KEY", "k-123")
    monkeypatch.setenv("UNRELATED_SECRET", "s-456")
    suite = make_task().parent
    # Shell variables are written $VAR: `${...}` in a config value is Hydra interpolation.
    cmd = 'echo "key=$FAKE_AGENT_KEY other=[$UNRELATED_SECRET] mode=$AGENT_MODE"'
    overrides = command(cmd, "agent.pass_env=[FAKE_AGENT_KEY]", "agent.env.AGENT_MODE=fast")
    rec = run_eval(suite, tmp_path / "run", *overrides).only
    assert rec.agent.output.strip() == "key=k-123 other=[] mode=fast"
    assert "k-123" not in (tmp_path / "run" / "config.yaml").read_text()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "agent.cmd: agent=command needs the command to run"),
        ({"cmd": "agent --in {prompt}"}, "unknown placeholder(s) prompt"),
        ({"cmd": "agent --in {prompt_file"}, "agent.cmd: "),
        ({"cmd": "agent", "pass_env": ["NOT_SET_ANYWHERE_42"]}, "NOT_SET_ANYWHERE_42"),
    ],
)
def test_bad_settings_are_usage_errors_before_the_run(options, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        CommandAgent(**options).preflight()


def test_literal_braces_are_allowed():
    CommandAgent(cmd="jq '{{a: 1}}' {prompt_file}").preflight()


def test_the_cli_refuses_a_missing_cmd_with_exit_2(tmp_path):
    proc = evalrun_cli("agent=command", f"run_dir={tmp_path / 'run'}", "ids=003-error-message-typo")
    assert proc.returncode == 2
    assert "agent.cmd" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_malformed_trajectory_lines_are_noted_and_the_rest_kept():
    text = '{"name": "a"}\nnot json\n{"args": {}}\n\n{"name": "b", "result": "ok"}\n'
    steps, problems = read_trajectory(text)
    assert [s.name for s in steps] == ["a", "b"]
    assert len(problems) == 2 and problems[0].startswith("trajectory file line 2")
    assert "line 3: name" in problems[1]


def test_a_bad_usage_file_leaves_cost_unknown_and_says_so():
    usage, problems = read_usage('{"cost_usd": "cheap"}')
    assert usage.cost_usd is None and problems
    usage, problems = read_usage('{"input_tokens": 10}')
    assert usage.cost_usd is None and not problems
    assert usage.cost_source.startswith("unknown:")


def test_agent_env_needs_no_plus_on_the_command_line(make_task, tmp_path):
    suite = make_task().parent
    proc = evalrun_cli(
        f"tasks_dir={suite}",
        f"run_dir={tmp_path / 'run'}",
        *command('echo "mode=$AGENT_MODE"'),
        "agent.env.AGENT_MODE=fast",
    )
    assert proc.returncode == 0, proc.stderr
    assert "Key 'AGENT_MODE' is not in struct" not in proc.stderr
    record = next((tmp_path / "run").glob("samples.jsonl")).read_text()
    assert "mode=fast" in record


ATIF_CLI = f"{shlex.quote(sys.executable)} {FIXTURES / 'atif_agent_cli.py'} --out {{atif_file}}"


def test_a_cli_that_writes_atif_gets_it_imported_with_no_glue(real_suite, tmp_path):
    done = run_eval(real_suite(TYPO), tmp_path / "run", *command(ATIF_CLI))
    rec = done.only
    assert rec.outcome == "pass", rec.reason
    assert rec.agent.error is None
    # No trajectory, usage or stdout of evalrun's kind: all three come from the ATIF document.
    assert rec.agent.output == "Fixed both typos."
    [call] = rec.agent.trajectory
    assert (call.name, call.result, call.input_tokens) == ("replace", "2 replaced", 700)
    usage = rec.agent.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (1500, 50, 500)
    assert usage.cost_usd == 0.003
    assert usage.cost_source == "reported by the agent (its ATIF final_metrics)"
    # trajectory.json is the agent's own document, kept whole, with the sample's identity added.
    [document] = checked_trajectories(done.run_dir)
    assert document["schema_version"] == "ATIF-v1.6"
    assert document["session_id"] == "my-session-1"
    assert document["agent"] == {"name": "my-agent", "version": "0.3.1"}
    assert document["steps"][1]["reasoning_content"] == "The word is misspelled twice."
    assert document["steps"][1]["metrics"]["cost_usd"] == 0.002
    assert document["final_metrics"]["total_cost_usd"] == 0.003
    assert document["extra"]["evalrun"]["outcome"] == "pass"


def test_an_invalid_atif_file_is_noted_and_evalruns_own_trajectory_written(real_suite, tmp_path):
    done = run_eval(real_suite(TYPO), tmp_path / "run", *command(ATIF_CLI + " --mode invalid"))
    rec = done.only
    assert rec.outcome == "pass", rec.reason
    assert rec.agent.atif is None
    assert rec.agent.error is not None
    assert "atif_file" not in rec.agent.error  # the path itself, not the placeholder
    assert "trajectory.json: not ATIF: steps.0: " in rec.agent.error
    assert "only an agent step has it" in rec.agent.error
    [document] = checked_trajectories(done.run_dir)
    assert document["agent"]["name"] == "command"
    assert [s["source"] for s in document["steps"]] == ["user", "agent"]
