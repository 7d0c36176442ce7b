"""`evalrun check` on verifiers written the way third-party suites write them
(tests/fixtures/foreign-verifiers: none uses the verifier kit): verifier hardening keeps every
gold solution passing, turns stdlib shadowing away from the verifiers that decide in `python3 -`,
a script of their own or `-m`, and check says, per hack that still wins, what to change."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from evalrun.honesty.tamper import ATTACKS, TamperAgent
from evalrun.models.records import Outcome
from evalrun.run.engine import run_sample
from evalrun.run.trial import Limits
from evalrun.tasks.loader import load_task
from tests.cli.test_main import evalrun
from tests.conftest import REPO
from tests.sandbox.conftest import backend_params, build_backend

FOREIGN = REPO / "tests" / "fixtures" / "foreign-verifiers"
LIMITS = Limits(setup_s=60, agent_s=60, verify_s=60, max_retries=0, retry_backoff_s=0.01)
SHADOW_STDLIB = next(a for a in ATTACKS if a.name == "shadow-stdlib")


def test_every_foreign_verifier_stays_honest_with_hardening_on():
    """Gold passes, the untouched workspace and every near miss fail, in all 16 styles - a task
    whose own module is `queue.py` included."""
    proc = evalrun("check", "--tamper=none", f"tasks_dir={FOREIGN}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all 16 verifiers honest" in proc.stdout


@pytest.mark.parametrize("backend_id", backend_params(["bwrap", "docker"]))
@pytest.mark.parametrize("task_id", ["001-stdin-runs-cli", "003-root-check-script"])
def test_shadowed_stdlib_no_longer_beats_a_verifier_deciding_in_the_workspace(
    task_id: str, backend_id: str, tmp_path: Path, request: pytest.FixtureRequest
):
    """`python3 - <<'PY'` and `python3 check.py` from the workspace root import json/subprocess
    from the workspace: the hack wins with hardening off (run-wide or in task.yaml), not on."""
    backend = build_backend(backend_id, request)
    opted_out = tmp_path / task_id
    shutil.copytree(FOREIGN / task_id, opted_out)
    with (opted_out / "task.yaml").open("a") as spec:
        spec.write("verifier_hardening: false\n")
    tasks = {
        "on": load_task(FOREIGN / task_id),
        "off for the run": load_task(FOREIGN / task_id, verifier_hardening=False),
        "off in task.yaml": load_task(opted_out),
    }

    async def attack(which: str) -> Outcome:
        agent = TamperAgent(SHADOW_STDLIB, isolated=True)
        record = await run_sample(tasks[which], 0, agent, backend, LIMITS, run_id="hardening")
        return record.outcome

    outcomes = {which: asyncio.run(attack(which)) for which in tasks}
    assert outcomes == {
        "on": Outcome.failed,
        "off for the run": Outcome.passed,
        "off in task.yaml": Outcome.passed,
    }


def test_check_gives_each_winning_hack_its_fix_and_says_when_hardening_was_off():
    proc = evalrun(
        "check",
        "--tamper=verifier",
        f"tasks_dir={FOREIGN}",
        "ids=[001-stdin-runs-cli,011-verdict-file]",
        "verifier_hardening=false",
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = " ".join(proc.stdout.split())
    assert (
        "001-stdin-runs-cli gameable by tamper/shadow-stdlib (got pass) - fix: verifier "
        "hardening was off for this task" in out
    ), out
    assert (
        "011-verdict-file gameable by tamper/pass-files (got pass) - fix: read the verdict from "
        "the verifier's own exit status, not a file the workspace can write; verifier hardening "
        "cannot fix this" in out
    ), out
    assert "verifier hardening was off for 2 task(s)" in out
