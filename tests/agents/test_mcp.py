"""A task's MCP servers reach the agents that speak MCP, in each CLI's own config, and the real
CLIs use them: Claude Code, codex, Gemini CLI and opencode, each driven by a stand-in model
(tests/api_standins.py) inside a real sandbox, start the task's stdio server there, call its
tool when the model asks, hand its answer back to the model and pass the task. Agents without an
MCP client skip such a task with their reason; agent=command gets the servers as a JSON file."""

from __future__ import annotations

import json
import tomllib

import pytest

from evalrun.agents.base import RunScope
from evalrun.agents.coder.agent import CoderAgent
from evalrun.agents.installed import Launch
from evalrun.agents.presets.claude_code import ClaudeCode
from evalrun.agents.presets.codex import Codex
from evalrun.agents.presets.gemini_cli import GeminiCli
from evalrun.agents.presets.opencode import Opencode
from evalrun.cli.hydra import compose_config
from evalrun.config.providers import Provider
from evalrun.errors import UsageError
from evalrun.run.plan import build, without_unhostable
from evalrun.sandbox.local import LocalBackend
from evalrun.tasks.base import McpServer
from tests.agents.conftest import run_eval
from tests.api_standins import ApiStandin, Turn, say, tool
from tests.atif_check import checked_trajectories
from tests.conftest import REPO
from tests.sandbox.conftest import backend_params, build_backend

FIXTURE = REPO / "tests" / "fixtures" / "harbor-mcp"
SECRET = "vault-923343efa34d5913"  # what the fixture's server answers for billing
KEY_VAR = "EVALRUN_TEST_PROVIDER_KEY"
SERVERS = (
    McpServer(name="vault", transport="stdio", command="python3", args=("/app/vault/server.py",)),
    McpServer(name="search", transport="streamable-http", url="http://search:8000/mcp"),
    McpServer(name="events", transport="sse", url="http://events:8000/sse"),
)
LAUNCH = Launch(
    cli="/opt/cli", root="/opt", runtime=[], prompt_file="/s/prompt.md", scratch="/s",
    log_file="/s/log", workdir="/app", model="m", mcp_servers=SERVERS,
)  # fmt: skip
PROVIDER = Provider("x", "m", "http://127.0.0.1:9", api="openai", api_key_env=KEY_VAR)


def test_claude_code_gets_an_mcp_config_file_on_its_command_line():
    agent = ClaudeCode("1", PROVIDER)
    ((path, text),) = agent.files(LAUNCH).items()
    assert path == "/s/mcp.json" and "--mcp-config /s/mcp.json" in agent.command(LAUNCH)
    assert json.loads(text) == {
        "mcpServers": {
            "vault": {"type": "stdio", "command": "python3", "args": ["/app/vault/server.py"]},
            "search": {"type": "http", "url": "http://search:8000/mcp"},
            "events": {"type": "sse", "url": "http://events:8000/sse"},
        }
    }


def test_codex_gets_mcp_server_tables_in_a_codex_home_of_its_own():
    agent = Codex("1", PROVIDER)
    ((path, text),) = agent.files(LAUNCH).items()
    assert path == "/s/codex/config.toml"
    assert agent.command(LAUNCH).startswith("CODEX_HOME=/s/codex ")
    assert tomllib.loads(text) == {
        "mcp_servers": {
            "vault": {"command": "python3", "args": ["/app/vault/server.py"]},
            "search": {"url": "http://search:8000/mcp"},
            "events": {"url": "http://events:8000/sse"},
        }
    }


def test_gemini_cli_gets_mcp_servers_in_the_settings_it_copies_to_its_home():
    agent = GeminiCli("1", PROVIDER)
    settings = json.loads(agent.files(LAUNCH)["/s/settings.json"])
    assert '"$HOME/.gemini/settings.json"' in agent.command(LAUNCH)
    assert settings["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    assert settings["mcpServers"] == {
        "vault": {"command": "python3", "args": ["/app/vault/server.py"]},
        "search": {"httpUrl": "http://search:8000/mcp"},
        "events": {"url": "http://events:8000/sse"},
    }


def test_opencode_gets_mcp_servers_in_its_config_file():
    agent = Opencode("1", PROVIDER)
    config = json.loads(agent.files(LAUNCH)["/s/opencode.json"])
    assert "OPENCODE_CONFIG=/s/opencode.json" in agent.command(LAUNCH)
    assert config["provider"]["evalrun"]["npm"] == "@ai-sdk/openai-compatible"
    assert config["mcp"] == {
        "vault": {"type": "local", "command": ["python3", "/app/vault/server.py"], "enabled": True},
        "search": {"type": "remote", "url": "http://search:8000/mcp", "enabled": True, "oauth": False},
        "events": {"type": "remote", "url": "http://events:8000/sse", "enabled": True, "oauth": False},
    }  # fmt: skip


def test_a_task_without_servers_changes_no_preset_config():
    plain = Launch(**{**LAUNCH.__dict__, "mcp_servers": ()})
    assert ClaudeCode("1", PROVIDER).files(plain) == {} == Codex("1", PROVIDER).files(plain)
    assert "mcp" not in Opencode("1", PROVIDER).files(plain)["/s/opencode.json"]
    assert "mcpServers" not in GeminiCli("1", PROVIDER).files(plain)["/s/settings.json"]


# agent -> (model, base-url suffix, the turns that call the server's tool, the step it becomes)
CALLS = {
    "claude_code": (
        "claude-sonnet-4-5",
        "",
        # Claude Code defers MCP tools: the model loads the schema first, as it is told to
        [tool("ToolSearch", query="select:mcp__vault__read_secret", max_results=1),
         tool("mcp__vault__read_secret", service="billing")],
        "mcp__vault__read_secret",
    ),
    "codex": ("gpt-4o-mini", "/v1", [tool("mcp__vault/read_secret", service="billing")], "mcp_tool_call"),
    "gemini_cli": ("gemini-2.5-flash", "", [tool("mcp_vault_read_secret", service="billing")], "mcp_vault_read_secret"),
    "opencode": ("gpt-4o-mini", "/v1", [tool("vault_read_secret", service="billing")], "vault_read_secret"),
}  # fmt: skip
WRITE = {
    "claude_code": tool("Bash", command=f"printf {SECRET} > /app/answer.txt"),
    "codex": tool("exec_command", cmd=f"printf {SECRET} > /app/answer.txt"),
    "gemini_cli": tool("run_shell_command", command=f"printf {SECRET} > /app/answer.txt"),
    "opencode": tool("bash", command=f"printf {SECRET} > /app/answer.txt", description="answer"),
}


def run_with_standin(
    agent: str, backend: str, model: str, suffix: str, turns: list[Turn], tmp_path
):
    # opencode also asks its model for a title, offering no tools: that request takes no turn
    with ApiStandin(turns, model=model, untooled=say("Vault secret")) as server:
        done = run_eval(
            FIXTURE,
            tmp_path / "run",
            f"agent={agent}",
            f"sandbox={backend}",
            f"provider.base_url={server.url}{suffix}",
            f"provider.model={model}",
            f"provider.api_key_env={KEY_VAR}",
            # node reserves more address space than bwrap's default cap
            *(["sandbox.memory_mb=null"] if backend == "bwrap" else []),
        )
    return done, server


@pytest.mark.parametrize(
    "agent, backend",
    [
        pytest.param("claude_code", "docker", marks=pytest.mark.docker),
        *(pytest.param(a, "bwrap", marks=pytest.mark.bwrap) for a in CALLS),
    ],
)
def test_a_real_cli_starts_the_tasks_server_in_the_sandbox_and_calls_its_tool(
    agent, backend, request, tmp_path, monkeypatch
):
    build_backend(backend, request)  # skip here, or fail in CI, when the engine is missing
    monkeypatch.setenv(KEY_VAR, "sk-evalrun-test")
    model, suffix, calls, step_name = CALLS[agent]
    done, server = run_with_standin(
        agent, backend, model, suffix, [*calls, WRITE[agent], say("Done.")], tmp_path
    )
    rec = done.only
    assert rec.outcome == "pass", (rec.reason, rec.agent.error)
    (step,) = [s for s in rec.agent.trajectory if s.name == step_name]
    assert SECRET in (step.result or "") and step.error is None
    # the server's answer went back to the model as the tool's result
    assert any(SECRET in json.dumps(r.body) for r in server.requests if r.method == "POST")
    # the sample's trajectory.json is valid ATIF (evalrun's models and the independent schema)
    # and holds the MCP tool call: every MCP-speaking preset's run, not only the gateway tests'
    [document] = checked_trajectories(done.run_dir)
    assert document["agent"]["name"] == agent
    named = [c["function_name"] for s in document["steps"] for c in s.get("tool_calls", [])]
    assert step_name in named, named


def test_an_agent_without_an_mcp_client_skips_the_task_with_its_reason(tmp_path, capsys):
    plan = build(
        compose_config(
            [f"tasks_dir={FIXTURE}", f"run_dir={tmp_path / 'run'}", "agent=coder", "sandbox=bwrap"]
        )
    )
    assert [t.id for t in plan.tasks] == ["vault-secret"]
    with plan.agent.prepared(LocalBackend()) as scope:
        assert isinstance(plan.agent, CoderAgent)
        with pytest.raises(UsageError) as err:
            without_unhostable(plan, scope)
    assert "vault-secret: needs MCP servers (vault): agent=coder has no MCP client" in str(
        err.value
    )
    assert without_unhostable(plan, RunScope()) is plan  # the oracle's scope: nothing refused


@pytest.mark.parametrize("backend", backend_params(["bwrap"]))
def test_a_preset_whose_cli_has_no_mcp_client_skips_the_task_with_its_reason(
    backend, request, tmp_path, monkeypatch
):
    build_backend(backend, request)
    monkeypatch.setenv(KEY_VAR, "sk-evalrun-test")
    with pytest.raises(UsageError) as err:  # installed and proven in a sandbox, then refused
        run_with_standin("mini_swe_agent", backend, "gpt-4o-mini", "/v1", [], tmp_path)
    assert str(err.value) == (
        "agent=mini_swe_agent can run none of the selected tasks:\n  vault-secret: needs MCP "
        "servers (vault): mini-swe-agent has no MCP client (its one tool is bash)"
    )


@pytest.mark.parametrize("backend", backend_params(["bwrap"]))
def test_the_command_agent_gets_the_servers_as_a_json_file(backend, request, tmp_path):
    build_backend(backend, request)
    cmd = 'cat {mcp_servers_file}; test "$EVALRUN_MCP_SERVERS_FILE" = {mcp_servers_file}'
    done = run_eval(
        FIXTURE, tmp_path / "run", "agent=command", f"sandbox={backend}", f"agent.cmd='{cmd}'"
    )
    rec = done.only
    assert rec.agent.error is None, rec.agent.error
    assert json.loads(rec.agent.output) == [
        {"name": "vault", "transport": "stdio", "command": "python3",
         "args": ["/app/vault/server.py"], "url": None}
    ]  # fmt: skip
