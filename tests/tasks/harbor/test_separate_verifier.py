"""Harbor's separate verifier: `[verifier] environment_mode = "separate"` (or a
`[verifier.environment]`) grades in a fresh container that gets only the agent's artifacts.

The fixture tests/fixtures/harbor-separate/greeting has the agent fix /app/greet.sh in its own
image; a collect command copies the script and its output into /logs/artifacts, /app/greet.sh is
a declared artifact too, and tests/Dockerfile bundles the tests into the verifier's image. The
docker tests need a running engine and the local base image (they skip without, and FAIL without
when EVALRUN_CI=1).
"""

from __future__ import annotations

import asyncio
import shutil
import textwrap
from pathlib import Path

import pytest

from evalrun.agents.noop import NoopAgent
from evalrun.agents.oracle import OracleAgent
from evalrun.errors import TaskFormatError
from evalrun.models.records import AgentResult, Outcome, SampleRecord
from evalrun.run.engine import run_sample
from evalrun.run.trial import Limits
from evalrun.sandbox.base import Sandbox
from evalrun.sandbox.local import LocalBackend
from evalrun.tasks.base import Artifact, CollectCommand
from evalrun.tasks.loader import Task, load_task
from tests.conftest import BASE_IMAGE, REPO

FIXTURE = REPO / "tests" / "fixtures" / "harbor-separate" / "greeting"
LIMITS = Limits(setup_s=120, agent_s=60, verify_s=60, max_retries=0)


def write_task(root: Path, toml: str, files: dict[str, str] | None = None) -> Path:
    folder = root / "sep"
    contents = {
        "task.toml": toml,
        "instruction.md": "Fix it.\n",
        "tests/test.sh": 'echo 1 > "$VERIFIER_DIR/reward.txt"\n',
        **(files or {}),
    }
    for rel, text in contents.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


# --- loading -----------------------------------------------------------------------------------


def test_the_fixture_loads_with_its_collect_commands_artifacts_and_bundled_tests():
    fmt = load_task(FIXTURE).format
    apart = fmt.separate_verifier
    assert apart is not None and not fmt.unsupported
    assert apart.bundled_tests
    assert apart.spec.image is not None and apart.spec.image.context_dir == FIXTURE / "tests"
    assert apart.artifacts == (Artifact("/logs/artifacts"), Artifact("/app/greet.sh"))
    assert apart.collect[0].command.startswith("cp /app/greet.sh /logs/artifacts/")
    assert apart.collect[0].timeout_s == 60.0


def test_the_verifier_image_follows_harbors_precedence(tmp_path):
    toml = '[verifier]\nenvironment_mode = "separate"\n'
    image_task = {"environment/Dockerfile": f"FROM {BASE_IMAGE}\n"}
    own = load_task(write_task(tmp_path / "a", toml, image_task)).format
    assert own.separate_verifier is not None and not own.separate_verifier.bundled_tests
    assert own.separate_verifier.spec.image == own.sandbox_spec.image  # tests are copied in

    named = '[verifier.environment]\ndocker_image = "graders/x:1"\ncpus = 2\n'
    prebuilt = load_task(write_task(tmp_path / "b", named, image_task)).format.separate_verifier
    assert prebuilt is not None and prebuilt.bundled_tests
    assert prebuilt.spec.image is not None and prebuilt.spec.image.prebuilt == "graders/x:1"
    assert prebuilt.spec.cpus == 2


def test_table_artifacts_and_collect_users_are_read_and_shared_mode_has_none(tmp_path):
    toml = textwrap.dedent(
        """\
        artifacts = [{ source = "out", exclude = ["*.tmp"] }]
        [verifier]
        environment_mode = "separate"
        [[verifier.collect]]
        command = "make report"
        timeout_sec = 5
        user = 0
        """
    )
    apart = load_task(write_task(tmp_path / "a", toml)).format.separate_verifier
    assert apart is not None
    assert apart.artifacts[1] == Artifact("out", ("*.tmp",))
    assert apart.collect == (CollectCommand("make report", 5.0, "0"),)
    assert load_task(write_task(tmp_path / "b", "")).format.separate_verifier is None


@pytest.mark.parametrize(
    ("toml", "field"),
    [
        ('artifacts = ["../outside"]\n', "artifacts.0.source"),
        ('[verifier]\nenvironment_mode = "shared"\n[verifier.environment]\ncpus = 1\n', "verifier"),
    ],
)
def test_what_harbor_refuses_cannot_load(tmp_path, toml, field):
    with pytest.raises(TaskFormatError) as raised:
        load_task(write_task(tmp_path, toml))
    assert raised.value.field == field


def test_other_compose_services_and_steps_stay_unsupported(tmp_path):
    toml = '[verifier]\nenvironment_mode = "separate"\n[[verifier.collect]]\ncommand = "x"\n'
    sidecar = load_task(write_task(tmp_path / "a", toml + 'service = "db"\n')).format
    assert sidecar.unsupported == (
        "a compose service besides main ('db', for the separate verifier)",
    )
    steps = '[[steps]]\nname = "one"\n[steps.verifier]\nenvironment_mode = "separate"\n'
    files = {"steps/one/instruction.md": "x\n", "steps/one/tests/test.sh": "exit 0\n"}
    stepped = load_task(write_task(tmp_path / "b", steps, files)).format
    assert any("separate verifier in a multi-step task" in u for u in stepped.unsupported)


def test_a_backend_that_cannot_copy_files_out_skips_the_task_with_why():
    task = load_task(FIXTURE)
    assert task.format.cannot_run_on(LocalBackend()) == (
        "a separate verifier needs sandbox=docker (its artifacts are copied out)"
    )


# --- on docker ---------------------------------------------------------------------------------


def _docker(user: str = "0:0"):
    from evalrun.sandbox.docker.backend import DockerBackend

    return DockerBackend(image=BASE_IMAGE, user=user)


def _run(task: Task, agent, backend) -> SampleRecord:
    return asyncio.run(run_sample(task, 0, agent, backend, LIMITS, "t"))


class Planter:
    """An agent that leaves no fix, only traps for a verifier that would run where it worked:
    a passing tests/test.sh (in the workspace and at /tests), a sitecustomize.py that writes a
    reward, and a process that keeps writing one."""

    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult:
        plant = textwrap.dedent(
            """\
            pass='mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt'
            mkdir -p tests /tests && echo "$pass" > tests/test.sh && cp tests/test.sh /tests/
            echo "import os; os.system('$pass')" > sitecustomize.py
            cp sitecustomize.py /logs/artifacts/sitecustomize.py
            (while :; do echo 1 > /logs/verifier/reward.txt 2>/dev/null; sleep 0.1; done) &
            """
        )
        result = await sandbox.exec(plant)
        return AgentResult(output=result.stdout, error=None if result.ok else result.stderr)


@pytest.mark.docker
def test_the_oracle_passes_and_noop_fails_in_the_verifiers_own_container(docker_client):
    backend = _docker()
    task = load_task(FIXTURE)
    assert task.format.cannot_run_on(backend) is None
    gold = _run(task, OracleAgent(), backend)
    assert gold.outcome is Outcome.passed, gold.reason
    assert gold.scores == {"reward": 1.0}
    untouched = _run(task, NoopAgent(), backend)
    assert untouched.outcome is Outcome.failed
    assert "does not print hello world" in (untouched.reason or "")


@pytest.mark.docker
def test_what_the_agent_planted_outside_its_artifacts_never_reaches_grading(docker_client):
    record = _run(load_task(FIXTURE), Planter(), _docker())
    assert record.agent is not None and record.agent.error is None
    assert record.outcome is Outcome.failed, record.reason
    assert record.scores == {"reward": 0.0}


@pytest.mark.docker
def test_without_bundled_tests_they_are_copied_into_the_task_image(docker_client, tmp_path):
    """No tests/Dockerfile: the verifier's container runs the task's own image, tests copied in;
    as the unprivileged sandbox user too."""
    task_dir = tmp_path / "greeting"
    shutil.copytree(FIXTURE, task_dir)
    (task_dir / "tests" / "Dockerfile").unlink()
    task = load_task(task_dir)
    assert task.format.separate_verifier is not None
    assert not task.format.separate_verifier.bundled_tests
    backend = _docker(user="1000:1000")
    gold = _run(task, OracleAgent(), backend)
    assert gold.outcome is Outcome.passed, gold.reason
    assert _run(task, NoopAgent(), backend).outcome is Outcome.failed


@pytest.mark.docker
def test_a_failing_collect_command_is_logged_and_grading_goes_on(docker_client, tmp_path):
    task_dir = tmp_path / "greeting"
    shutil.copytree(FIXTURE, task_dir)
    toml = task_dir / "task.toml"
    failing = '[[verifier.collect]]\ncommand = "echo broken >&2; exit 3"\n\n'
    toml.write_text(
        toml.read_text().replace("[[verifier.collect]]\n", failing + "[[verifier.collect]]\n", 1)
    )
    logs: dict[str, str] = {}
    sink = lambda _cell, name, text: logs.__setitem__(name, text)  # noqa: E731
    task = load_task(task_dir)
    gold = asyncio.run(run_sample(task, 0, OracleAgent(), _docker(), LIMITS, "t", sink))
    assert gold.outcome is Outcome.passed, gold.reason
    assert (
        logs["collect.log"] == "collect command failed (exit 3): echo broken >&2; exit 3: broken\n"
    )
