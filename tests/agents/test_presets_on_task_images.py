"""An agent preset on Harbor tasks that bring their own image, on `sandbox=docker`.

The agent's install (a derived image layer) and the gateway's socket must reach every sample's
container whatever image the task brings: one built from its environment/Dockerfile and one
named by `docker_image`, in the same run (the prebuilt task makes planning look at images before
the agent is prepared); a third task's prebuilt image has no python3, which the gateway's
in-sandbox forwarder needs, and is skipped with that reason before any sample. Claude Code, the real pinned CLI, against the local Anthropic stand-in
(tests/api_standins.py); no live provider is called.
"""

from __future__ import annotations

import shutil

import docker
import pytest

from tests.agents.conftest import run_eval
from tests.agents.test_presets import KEY_VAR, SECRET, overrides
from tests.api_standins import ApiStandin, say, tool
from tests.conftest import REPO, tag_local_bases
from tests.sandbox.conftest import build_backend

SUITE = REPO / "tests" / "fixtures" / "harbor-agent"
FIX = "sed -i s/Invlaid/Invalid/g notes/settings.py"
MODEL = "claude-sonnet-4-5"
NO_PYTHON = "evalrun-test/no-python3:1"


def build_image_without_python(base: str) -> None:
    """A prebuilt image as a suite might name one: the base image with python3 removed."""
    import io

    import docker

    dockerfile = f"FROM {base}\nRUN rm -f /usr/bin/python3*\n"
    client = docker.from_env()
    client.images.build(
        fileobj=io.BytesIO(dockerfile.encode()),
        tag=NO_PYTHON,
        pull=False,
        network_mode="none",
        rm=True,
    )


@pytest.mark.docker
def test_a_preset_runs_in_a_dockerfile_image_and_in_a_prebuilt_one(request, tmp_path, monkeypatch):
    backend = build_backend("docker", request)  # skip, or fail in CI, without the engine
    build_image_without_python(backend.image)
    tag_local_bases(docker.from_env())  # the FROM name own-dockerfile's Dockerfile uses
    monkeypatch.setenv(KEY_VAR, SECRET)
    suite = tmp_path / "suite"
    shutil.copytree(SUITE, suite)
    script = [tool("Bash", command=FIX), say("Fixed.")] * 2
    with ApiStandin(script, model=MODEL) as server:
        done = run_eval(
            suite, tmp_path / "run", *overrides("claude_code", "docker", server.url, MODEL)
        )
    by_task = {r.task_id: r for r in done.records}
    assert sorted(by_task) == ["own-dockerfile", "prebuilt"], done.console
    assert (
        "no-python (cannot run): agent=claude_code cannot run in its image "
        f"'{NO_PYTHON}': no python3 in the sandbox for the gateway forwarder"
    ) in " ".join(done.console.split()), done.console
    for rec in by_task.values():
        assert rec.outcome == "pass", (rec.task_id, rec.reason, rec.agent.error)
        assert [s.name for s in rec.agent.trajectory] == ["Bash"]
    assert len(server.completed) == 4
