"""A Harbor task's `[[environment.mcp_servers]]`: loaded onto the task as Harbor reads them, and
the fixture task (a stdio MCP server written in Python) graded honestly on every isolated
backend: the oracle, which talks MCP to the server itself, passes; the noop agent fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrun.errors import TaskFormatError
from evalrun.tasks.base import McpServer, McpTransport
from evalrun.tasks.loader import load_task
from tests.agents.conftest import run_eval
from tests.conftest import REPO
from tests.sandbox.conftest import backend_params, build_backend
from tests.tasks.harbor.test_task import harbor_task

FIXTURE = REPO / "tests" / "fixtures" / "harbor-mcp"
VAULT = McpServer(
    name="vault", transport=McpTransport.stdio, command="python3", args=("/app/vault/server.py",)
)


def test_the_fixture_loads_with_its_server_and_nothing_unsupported():
    task = load_task(FIXTURE / "vault-secret")
    assert task.spec.mcp_servers == (VAULT,)
    assert task.format.unsupported == () and task.format.warnings == ()


def test_servers_load_as_harbor_reads_them(tmp_path: Path):
    toml = """
[[environment.mcp_servers]]
name = "search"
url = "http://search:8000/sse"
x_note = "not Harbor's"

[[environment.mcp_servers]]
name = "files"
transport = "http"
url = "http://files:9000/mcp"

[[environment.mcp_servers]]
name = "search"
transport = "stdio"
command = "search-mcp"
args = ["--root", "/app"]
"""
    task = load_task(harbor_task(tmp_path, "servers", files={"task.toml": toml}))
    assert task.spec.mcp_servers == (
        # a later entry of the same name replaces the earlier one, in the earlier one's place
        McpServer(name="search", transport="stdio", command="search-mcp", args=("--root", "/app")),
        McpServer(name="files", transport="streamable-http", url="http://files:9000/mcp"),
    )
    assert any(
        "unknown key [environment.mcp_servers[0]] 'x_note'" in w for w in task.format.warnings
    )


@pytest.mark.parametrize(
    "entry, message",
    [
        ("name = 'a'\ntransport = 'stdio'", "'command' is required for transport 'stdio'"),
        ("name = 'a'", "'url' is required for transport 'sse'"),  # Harbor's default transport
        ("name = 'a'\ntransport = 'websocket'\nurl = 'ws://a'", "Input should be 'stdio'"),
        ("transport = 'stdio'\ncommand = 'x'", "Field required"),
    ],
)
def test_a_server_harbor_refuses_cannot_load_and_the_error_names_it(tmp_path, entry, message):
    folder = harbor_task(
        tmp_path, "bad", files={"task.toml": f"[[environment.mcp_servers]]\n{entry}\n"}
    )
    with pytest.raises(TaskFormatError) as err:
        load_task(folder)
    assert "field 'environment.mcp_servers.0" in str(err.value) and message in str(err.value)


@pytest.mark.parametrize("backend", backend_params(["docker", "bwrap"]))
@pytest.mark.parametrize("agent, outcome", [("oracle", "pass"), ("noop", "fail")])
def test_the_oracle_passes_and_noop_fails_the_mcp_task(agent, outcome, backend, request, tmp_path):
    build_backend(backend, request)  # skip here, or fail in CI, when the engine is missing
    done = run_eval(FIXTURE, tmp_path / "run", f"agent={agent}", f"sandbox={backend}")
    rec = done.only
    assert rec.outcome == outcome, rec.reason
    if outcome == "fail":
        assert "holds 'nothing', not the secret read_secret gives" in (rec.reason or "")
