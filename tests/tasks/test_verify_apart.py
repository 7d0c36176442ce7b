"""An evalrun-format task whose verifier runs apart (`verify_apart` in task.yaml).

The fixture tests/fixtures/native-apart/fix-the-port asks the agent to fix config.ini; only
config.ini is carried into the verifier's fresh sandbox, which is set up from setup/ as the
agent's was. The docker tests need a running engine and the local base image (they skip
without, and FAIL without when EVALRUN_CI=1).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from evalrun.agents.noop import NoopAgent
from evalrun.agents.oracle import OracleAgent
from evalrun.errors import TaskFormatError
from evalrun.models.records import AgentResult, Outcome, SampleRecord
from evalrun.run.engine import run_sample
from evalrun.run.trial import Limits
from evalrun.sandbox.base import Sandbox
from evalrun.sandbox.bwrap.backend import BwrapBackend
from evalrun.sandbox.local import LocalBackend
from evalrun.tasks.base import Artifact, CollectCommand, SetupFailed
from evalrun.tasks.loader import Task, load_task
from evalrun.tasks.native import NativeFormat
from tests.conftest import BASE_IMAGE, REPO

SUITE = REPO / "tests" / "fixtures" / "native-apart"
FIXTURE = SUITE / "fix-the-port"
LIMITS = Limits(setup_s=60, agent_s=60, verify_s=60, max_retries=0)


def _with_task_yaml(tmp_path: Path, extra: str) -> Path:
    """A copy of the fixture whose task.yaml ends with `extra` instead of its verify_apart."""
    folder = tmp_path / FIXTURE.name
    subprocess.run(["cp", "-r", str(FIXTURE), str(folder)], check=True)
    task_yaml = folder / "task.yaml"
    head = task_yaml.read_text().split("verify_apart:")[0]
    task_yaml.write_text(head + extra)
    return folder


# --- loading -----------------------------------------------------------------------------------


def test_verify_apart_loads_as_a_separate_verifier_set_up_like_the_agents_sandbox():
    task = load_task(FIXTURE)
    apart = task.format.separate_verifier
    assert apart is not None
    assert apart.artifacts == (Artifact("config.ini"),)
    assert apart.collect == ()
    assert apart.set_up and not apart.bundled_tests
    assert apart.spec.is_default  # the same sandbox as the agent's: the backend's image


def test_collect_commands_and_the_whole_workspace_default(tmp_path):
    folder = _with_task_yaml(tmp_path, "verify_apart:\n  collect: ['make dist', 'ls']\n")
    apart = load_task(folder).format.separate_verifier
    assert apart is not None
    assert apart.artifacts == (Artifact("."),)
    assert apart.collect == (CollectCommand("make dist"), CollectCommand("ls"))


def test_a_task_without_it_grades_in_the_agents_sandbox(tmp_path):
    folder = _with_task_yaml(tmp_path, "")
    assert load_task(folder).format.separate_verifier is None
    assert load_task(folder).format.cannot_run_on(LocalBackend()) is None


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (
            "verify_apart:\n  artifacts: [../outside]\n",
            "verify_apart.artifacts: expected a list of paths inside the workspace, e.g. [src, "
            "notes.txt], got ['../outside']",
        ),
        (
            "verify_apart:\n  artifacts: [/etc/passwd]\n",
            "verify_apart.artifacts: expected a list of paths inside the workspace, e.g. [src, "
            "notes.txt], got ['/etc/passwd']",
        ),
        ("verify_apart:\n  artifact: [x]\n", "unknown key 'artifact' (did you mean 'artifacts'?)"),
    ],
)
def test_a_path_outside_the_workspace_or_a_misspelt_key_is_refused_at_load(tmp_path, extra, said):
    with pytest.raises(TaskFormatError) as raised:
        load_task(_with_task_yaml(tmp_path, extra))
    assert said in str(raised.value)
    assert "task.yaml:" in str(raised.value)  # placed at its line


def test_a_backend_that_cannot_copy_files_out_skips_it_with_why():
    task = load_task(FIXTURE)
    why = "a separate verifier needs sandbox=docker (its artifacts are copied out)"
    assert task.format.cannot_run_on(LocalBackend()) == why
    assert task.format.cannot_run_on(BwrapBackend()) == why


# --- on docker ---------------------------------------------------------------------------------


def _docker():
    from evalrun.sandbox.docker.backend import DockerBackend

    return DockerBackend(image=BASE_IMAGE)


def _run(task: Task, agent) -> SampleRecord:
    return asyncio.run(run_sample(task, 0, agent, _docker(), LIMITS, "t"))


class Cheater:
    """An agent that leaves config.ini wrong and instead makes app.py print the right line, and
    leaves a process behind that puts the hack back whenever app.py is restored."""

    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult:
        hack = textwrap.dedent(
            """\
            echo 'print("listening on 8080")' > hack.py && cp hack.py app.py
            (while :; do cp hack.py app.py 2>/dev/null; sleep 0.05; done) >/dev/null 2>&1 &
            """
        )
        result = await sandbox.exec(hack)
        return AgentResult(output="done", error=None if result.ok else result.stderr)


@pytest.mark.docker
def test_the_oracle_passes_and_noop_fails_in_the_verifiers_own_sandbox(docker_client):
    task = load_task(FIXTURE)
    assert task.format.cannot_run_on(_docker()) is None
    gold = _run(task, OracleAgent())
    assert gold.outcome is Outcome.passed, gold.reason
    untouched = _run(task, NoopAgent())
    assert untouched.outcome is Outcome.failed
    assert (
        untouched.reason == "FAIL: app.py printed 'listening on 80', expected 'listening on 8080'"
    )


@pytest.mark.docker
def test_what_the_agent_changed_outside_the_artifacts_never_reaches_grading(
    docker_client, tmp_path
):
    record = _run(load_task(FIXTURE), Cheater())
    assert record.agent is not None and record.agent.error is None
    assert record.outcome is Outcome.failed
    assert "printed 'listening on 80'" in (record.reason or "")
    # the same hack against the same verifier in the agent's own sandbox passes: why
    # verify_apart exists
    shared = load_task(_with_task_yaml(tmp_path, ""))
    assert _run(shared, Cheater()).outcome is Outcome.passed


@dataclass(frozen=True)
class SetUpOnce(NativeFormat):
    """The fixture's format, but a set-up after the first fails (as the verifier's would on a
    machine whose engine runs out of disk between the two sandboxes)."""

    calls: list[str] = field(default_factory=list)

    async def prepare(self, sandbox: Sandbox, timeout_s: float) -> str:
        self.calls.append(sandbox.workdir)
        if len(self.calls) > 1:
            raise SetupFailed("setup.sh failed (exit 3): no space left on device")
        return await super().prepare(sandbox, timeout_s)


@pytest.mark.docker
def test_a_set_up_that_fails_in_the_verifiers_sandbox_is_an_error_not_a_fail(docker_client):
    task = load_task(FIXTURE)
    fmt = task.format
    assert isinstance(fmt, NativeFormat)
    once = SetUpOnce(fmt.layout, separate_verifier=fmt.separate_verifier)
    record = _run(replace(task, format=once), OracleAgent())
    assert len(once.calls) == 2  # the agent's sandbox, then the verifier's
    assert record.outcome is Outcome.error
    assert record.reason == (
        "the verifier's sandbox could not be set up: "
        "setup.sh failed (exit 3): no space left on device"
    )


@pytest.mark.docker
def test_evalrun_check_proves_it_honest_and_every_reward_hack_failed(docker_client):
    proc = subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", "check", "sandbox=docker", f"tasks_dir={SUITE}"],
        capture_output=True, text=True, cwd=REPO, env={**os.environ, "COLUMNS": "200"},
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all 1 verifiers honest" in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if "fix-the-port" in line)
    assert "1/1" in row  # wrong/port-8000 failed
    assert "21/21" in row  # tamper/edit-the-app and the 20 reward hacks of the library failed
