"""Reward hacks against the oracles: every attack of the library, played by a real `agent=command`
through the engine on 006-fix-bug-hidden-tests, ends in FAIL - not PASS, not error - on bwrap and
docker; and `evalrun check` names the hacks that beat a deliberately weak verifier."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest

from evalrun.honesty.tamper import ATTACKS, attacks_for
from evalrun.models.records import Outcome
from evalrun.tasks.loader import load_task
from tests.agents.conftest import run_eval
from tests.cli.test_main import evalrun
from tests.conftest import REPO
from tests.sandbox.conftest import backend_params, build_backend

TASK = REPO / "tasks" / "006-fix-bug-hidden-tests"
WEAK_SUITE = REPO / "tests" / "fixtures" / "gameable"
PRIVATE_DIR = "/evalrun"  # the harness's private folder on bwrap and docker


def command_for(attack_name: str) -> str:
    """The attack as an agent command line: its script, base64 so no shell or Hydra quoting
    (and no `{placeholder}` braces) can change it on the way."""
    attack = next(a for a in ATTACKS if a.name == attack_name)
    script = attack.render(PRIVATE_DIR, load_task(TASK).format.hidden_paths(), isolated=True)
    encoded = base64.b64encode(script.encode()).decode()
    return f"echo {encoded} | base64 -d | bash"


@pytest.mark.parametrize("backend_id", backend_params(["bwrap", "docker"]))
@pytest.mark.parametrize("attack", [a.name for a in ATTACKS])
def test_attack_on_hidden_tests_task_ends_in_fail(
    attack: str, backend_id: str, tmp_path: Path, request: pytest.FixtureRequest
):
    build_backend(backend_id, request)  # skip, or fail in CI, when the engine is missing
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / TASK.name).symlink_to(TASK, target_is_directory=True)
    done = run_eval(
        suite,
        tmp_path / "run",
        f"sandbox={backend_id}",
        "agent=command",
        f"agent.cmd='{command_for(attack)}'",
        "max_retries=0",
    )
    record = done.only
    assert record.outcome is Outcome.failed, (
        f"{attack} on {backend_id}: {record.outcome.value}: {record.reason}"
    )
    assert record.agent is not None and "not applicable" not in (record.agent.error or "")


def test_check_names_the_hacks_that_beat_a_weak_verifier():
    """A verifier that runs the agent's code in its own process passes gold/untouched/wrong and
    is still reported gameable, with the hacks named and the fix; check exits 1. Verifier
    hardening stops the stdlib and module shadowing; it cannot stop the agent's code deciding."""
    proc = evalrun("check", f"tasks_dir={WEAK_SUITE}")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = " ".join(proc.stdout.split())
    assert "GAMEABLE" in out and "1 gameable verifier(s): 001-unittest-in-process" in out
    for hack in ("patch-test-framework", "exit-at-import"):
        assert f"001-unittest-in-process gameable by tamper/{hack} (got pass) - fix: " in out, out
    assert "verifykit `Session` / `run`" in out and "verifier hardening cannot fix this" in out
    for hack in ("shadow-stdlib", "shadow-verifier-modules"):
        assert f"gameable by tamper/{hack}" not in out
    assert "dishonest" not in out
    skipped = len(ATTACKS) - len(attacks_for(isolated=False))
    assert f"{skipped} harness attacks" in out and "run only on isolated sandboxes" in out


def test_a_task_can_bring_its_own_tamper_overlay(tmp_path: Path):
    """`tamper/<name>/` beside `wrong/` is a hack aimed at one verifier: check runs it and
    reports the task gameable when it wins."""
    suite = tmp_path / "suite"
    task = suite / "001-unittest-in-process"
    shutil.copytree(WEAK_SUITE / task.name, task)
    hack = task / "tamper" / "answers-the-test"
    hack.mkdir(parents=True)
    (hack / "calc.py").write_text(  # knows the hidden test's two cases, nothing else
        "def add(a, b):\n    return {(2, 3): 5, (-1, 1): 0}.get((a, b), a - b)\n"
    )
    proc = evalrun("check", f"tasks_dir={suite}")
    assert proc.returncode == 1
    assert "gameable by tamper/answers-the-test" in " ".join(proc.stdout.split())


def test_the_tamper_flag_picks_which_hacks_run():
    """--tamper=none leaves the three honesty columns (the weak verifier passes them); a kind
    that does not exist is a usage error before anything runs."""
    proc = evalrun("check", "--tamper=none", f"tasks_dir={WEAK_SUITE}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all 1 verifiers honest" in proc.stdout
    bad = evalrun("check", "--tamper=everything", f"tasks_dir={WEAK_SUITE}")
    assert bad.returncode == 2
    assert "--tamper: invalid choice: 'everything'" in bad.stderr
    assert "(choose from 'all', 'verifier', 'harness', 'none')" in bad.stderr


def test_a_bash_verifier_cannot_be_rewritten_under_bash():
    """The agent's code, run by a bash verify.sh, overwrites every file it can reach - verify.sh
    included (verdict-from-import). bash reads a script as it goes; evalrun hands it the task's
    own text, so the rewrite changes nothing and every hack still fails."""
    suite = REPO / "tests" / "fixtures" / "bash-verifier"
    proc = evalrun("check", "--tamper=verifier", f"tasks_dir={suite}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all 1 verifiers honest" in proc.stdout
