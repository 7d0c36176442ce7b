"""The coder and command agents on every sandbox backend, on a real task.

Both act only through the Sandbox API, so they must behave the same on local, bwrap, docker and
modal (the Modal stand-in of tests/sandbox). Backends are built, skipped or failed (EVALRUN_CI=1)
the one way tests/sandbox/conftest.py does it; the model is the local OpenAI stand-in.
"""

from __future__ import annotations

import asyncio
import base64
import json

import pytest

from evalrun.agents.coder.agent import CoderAgent
from evalrun.agents.command import CommandAgent
from evalrun.config.providers import Provider
from evalrun.run.trial import Limits, Trial
from evalrun.tasks.loader import load_task
from tests.agents.test_coder import FIX_TYPO, TYPO
from tests.conftest import REPO
from tests.openai_standin import Standin, call
from tests.sandbox.conftest import ALL_BACKENDS, backend_params, build_backend

# Fixes the typo, reports one step and its usage; JSON braces doubled for the placeholders.
INLINE_CLI = (
    "cat {prompt_file} > /dev/null && sed -i s/Invlaid/Invalid/g settings.py"
    ' && echo \'{{"name": "sed", "args": {{"path": "settings.py"}}}}\' > {trajectory_file}'
    ' && echo \'{{"input_tokens": 7, "cost_usd": 0.25}}\' > "$EVALRUN_USAGE_FILE"'
    " && echo fixed"
)


def attempt(agent, backend):
    task = load_task(REPO / "tasks" / TYPO)
    return asyncio.run(Trial(task, 0, agent, Limits(), run_id="backends").run(backend))


@pytest.mark.parametrize("backend_id", backend_params(ALL_BACKENDS))
def test_command_agent_runs_and_reports_on_every_backend(backend_id, request):
    backend = build_backend(backend_id, request)
    rec = attempt(CommandAgent(cmd=INLINE_CLI), backend)
    assert rec.outcome == "pass", (rec.reason, rec.agent.error)
    assert rec.agent.output == "fixed\n"
    assert [(s.name, s.args) for s in rec.agent.trajectory] == [("sed", {"path": "settings.py"})]
    assert rec.agent.usage.cost_usd == 0.25


@pytest.mark.parametrize("backend_id", backend_params(ALL_BACKENDS))
def test_coder_tools_work_on_every_backend(backend_id, request, monkeypatch):
    backend = build_backend(backend_id, request)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    script = [call(("grep", {"pattern": "Invlaid"})), call(("bash", {"command": "pwd"})), *FIX_TYPO]
    with Standin(script) as server:
        provider = Provider("openai", "gpt-4o-mini", server.base_url, api="openai")
        rec = attempt(CoderAgent(provider), backend)
    assert rec.outcome == "pass", (rec.reason, rec.agent.error)
    steps = rec.agent.trajectory
    assert [s.name for s in steps] == ["grep", "bash", "ls", "read", "edit", "edit"]
    assert steps[0].result.count("Invlaid") == 2
    assert all(s.error is None for s in steps)


# A Harbor-style agent: fixes the typo and leaves its ATIF trajectory where Harbor's installed
# agents leave theirs, /logs/agent/trajectory.json, saying nothing else.
HARBOR_DOCUMENT = {
    "schema_version": "ATIF-v1.5",
    "session_id": "harbor-style",
    "agent": {"name": "terminus-like", "version": "2.0"},
    "steps": [
        {"step_id": 1, "source": "user", "message": "fix the typo"},
        {"step_id": 2, "source": "agent", "message": "Done: fixed it."},
    ],
}
HARBOR_CLI = (
    "sed -i s/Invlaid/Invalid/g settings.py && mkdir -p /logs/agent && echo "
    + base64.b64encode(json.dumps(HARBOR_DOCUMENT).encode()).decode()
    + " | base64 -d > /logs/agent/trajectory.json"
)


@pytest.mark.parametrize("backend_id", backend_params(["docker"]))
def test_an_agent_writing_atif_where_harbor_reads_it_is_imported(backend_id, request):
    backend = build_backend(backend_id, request)
    rec = attempt(CommandAgent(cmd=HARBOR_CLI), backend)
    assert rec.outcome == "pass", (rec.reason, rec.agent.error)
    assert rec.agent.error is None
    assert rec.agent.output == "Done: fixed it."
    assert rec.agent.atif == HARBOR_DOCUMENT
