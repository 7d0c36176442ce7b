"""`evalrun regrade`, end to end through the command, as a user meets it: a run graded by a buggy
verifier, the verifier fixed, the run regraded without running the agent again."""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from evalrun.rundir.log import RunLog
from tests.cli.test_main import evalrun
from tests.conftest import REPO
from tests.run.test_runner import killing_strays, new_marker
from tests.sandbox.conftest import backend_params, build_backend, host_pids_with

CORRECT = '[ "$(cat answer.txt)" = 42 ] && echo PASS || { echo "FAIL: not 42"; exit 1; }\n'
BUGGY = '[ "$(cat answer.txt)" = 43 ] && echo PASS || { echo "FAIL: not 43"; exit 1; }\n'


def buggy_suite(make_task) -> Path:
    """Two tasks the oracle solves; 002's verifier has a bug that fails the correct answer."""
    make_task("001-answer", files={"verify/verify.sh": CORRECT})
    return make_task("002-buggy", files={"verify/verify.sh": BUGGY}).parent


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


def pass_at_1(run_dir: Path) -> float:
    return json.loads((run_dir / "summary.json").read_text())["overall"]["pass_at"]["1"]


def digest(folder: Path) -> dict[str, str]:
    """Every file of a folder and the sha256 of its bytes (to prove it untouched)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "writer.lock"
    }


@pytest.mark.parametrize("sandbox", backend_params(["local", "bwrap", "docker"]))
def test_a_fixed_verifier_flips_the_verdicts_without_running_the_agent(
    sandbox, make_task, tmp_path, request
):
    build_backend(sandbox, request)  # skips (fails in CI) without the engine
    suite = buggy_suite(make_task)
    source, regraded = tmp_path / "source", tmp_path / "regraded"
    ran = evalrun(f"tasks_dir={suite}", f"run_dir={source}", f"sandbox={sandbox}", "trials=2")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert pass_at_1(source) == 0.5
    assert all(r["final_workspace"]["kept"] for r in records(source))
    before = digest(source)

    (suite / "002-buggy" / "verify" / "verify.sh").write_text(CORRECT)
    done = evalrun("regrade", str(source), f"run_dir={regraded}")

    assert done.returncode == 0, done.stdout + done.stderr
    said = " ".join(done.stdout.split())
    assert f"2 verdicts changed from {source}: 002-buggy: fail->pass 2" in said
    assert pass_at_1(regraded) == 1.0
    log = RunLog.open(regraded)
    assert log.plan.regrade_of is not None and log.plan.regrade_of.run_dir == str(source)
    assert log.plan.sandbox == sandbox
    by_cell = {(r["task_id"], r["trial"]): r for r in records(source)}
    for new in records(regraded):  # the agent's result and latency are the source's
        old = by_cell[(new["task_id"], new["trial"])]
        assert new["agent"] == old["agent"] and new["phases"]["agent"] == old["phases"]["agent"]
        assert new["regrade_of"] == {"run_id": "source", "outcome": old["outcome"]}
    assert digest(source) == before  # the source run is untouched

    diff = evalrun("diff", str(source), str(regraded))
    said = " ".join(diff.stdout.split())
    assert diff.returncode == 0 and "pass@1 0.50 → 1.00" in said
    assert "tasks whose content changed (fingerprint differs): 002-buggy" in said
    assert evalrun("report", str(regraded)).returncode == 0
    for command in (["show", str(regraded)], ["ls", str(tmp_path)]):
        shown = evalrun(*command)
        assert shown.returncode == 0 and "regraded" in shown.stdout, shown.stdout + shown.stderr


def test_a_run_quota_keeps_some_workspaces_and_says_why_not_the_rest(make_task, tmp_path):
    suite = buggy_suite(make_task)
    source = tmp_path / "source"
    quota = "final_workspaces.max_mb_per_run=0.0003"  # ~315 bytes: one archive, not two
    ran = evalrun(f"tasks_dir={suite}", f"run_dir={source}", quota, "trials=2", "concurrency=1")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    kept = [r["final_workspace"] for r in records(source)]
    assert [k["kept"] for k in kept].count(True) == 1, kept
    for k in kept:
        if k["kept"]:
            assert k["bytes"] == (source / "samples/001-answer/0/workspace.tar.gz").stat().st_size
        else:
            assert "final_workspaces.max_mb_per_run" in k["reason"], k

    (suite / "002-buggy" / "verify" / "verify.sh").write_text(CORRECT)
    done = evalrun("regrade", str(source), f"run_dir={tmp_path / 'regraded'}")

    assert done.returncode == 3, done.stdout + done.stderr  # samples with no new verdict
    said = " ".join(done.stdout.split())
    assert "3 samples not regraded:" in said
    assert "002-buggy#1: not regraded: its final workspace was not kept (" in said


def test_a_task_gone_from_the_tasks_folder_is_named_and_the_rest_regraded(make_task, tmp_path):
    suite = buggy_suite(make_task)
    source = tmp_path / "source"
    ran = evalrun(f"tasks_dir={suite}", f"run_dir={source}")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    shutil.rmtree(suite / "002-buggy")

    done = evalrun("regrade", str(source), f"run_dir={tmp_path / 'regraded'}")

    assert done.returncode == 4, done.stdout + done.stderr  # as a run with unloadable tasks
    said = " ".join(done.stdout.split())
    assert "1 task not regraded:" in said
    assert f"002-buggy (cannot load): no longer loads from {suite}: not regraded" in said
    assert [r["task_id"] for r in records(tmp_path / "regraded")] == ["001-answer"]


def test_over_the_per_sample_cap_nothing_is_kept_and_the_record_says_so(make_task, tmp_path):
    suite = buggy_suite(make_task)
    ran = evalrun(
        f"tasks_dir={suite}",
        f"run_dir={tmp_path / 'run'}",
        "final_workspaces.max_mb_per_sample=0.0001",
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    for record in records(tmp_path / "run"):
        reason = record["final_workspace"]["reason"]
        assert (
            reason == "its archive is over the cap (final_workspaces.max_mb_per_sample: 104 bytes)"
        )
    assert not list((tmp_path / "run").rglob("workspace.tar.gz*"))


@pytest.mark.parametrize("sandbox", backend_params(["bwrap"]))
def test_a_planted_link_out_of_the_workspace_is_kept_as_a_link_never_followed(
    sandbox, make_task, tmp_path, request
):
    build_backend(sandbox, request)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("the host's secret\n")
    solve = f"echo 42 > answer.txt\nln -s {outside} out\nln -s {outside}/secret.txt secret\n"
    verify = f'[ -L out ] && [ "$(readlink out)" = {outside} ] && echo PASS || exit 1\n'
    suite = make_task("001-link", files={"solution/solve.sh": solve, "verify/verify.sh": verify})
    source = tmp_path / "source"
    ran = evalrun(f"tasks_dir={suite.parent}", f"run_dir={source}", "sandbox=local")
    assert ran.returncode == 0, ran.stdout + ran.stderr

    with tarfile.open(source / "samples/001-link/0/workspace.tar.gz") as tar:
        members = {m.name: m for m in tar.getmembers()}
        payload = b"".join(tar.extractfile(m).read() for m in members.values() if m.isfile())
    assert members["out"].issym() and members["out"].linkname == str(outside)
    assert members["secret"].issym() and b"the host's secret" not in payload

    done = evalrun("regrade", str(source), f"run_dir={tmp_path / 'regraded'}", f"sandbox={sandbox}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [r["outcome"] for r in records(tmp_path / "regraded")] == ["pass"]
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]  # nothing written there
    assert (outside / "secret.txt").read_text() == "the host's secret\n"


def test_ctrl_c_mid_regrade_leaves_a_readable_partial_run(make_task, tmp_path):
    marker = new_marker()
    make_task("001-answer", files={"verify/verify.sh": CORRECT})
    suite = make_task("002-slow", files={"verify/verify.sh": CORRECT}).parent
    source, regraded = tmp_path / "source", tmp_path / "regraded"
    ran = evalrun(f"tasks_dir={suite}", f"run_dir={source}", "sandbox=local")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (suite / "002-slow" / "verify" / "verify.sh").write_text(f"sleep {marker}\n")

    proc = subprocess.Popen(
        [sys.executable, "-m", "evalrun.cli.main", "regrade", str(source), f"run_dir={regraded}",
         "concurrency=1"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    with killing_strays(marker):
        try:
            deadline = time.monotonic() + 120
            while not host_pids_with(marker):  # 001 graded, 002's verifier sleeping
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "the regrade never reached the slow verifier"
                time.sleep(0.1)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    said = " ".join(out.split())
    assert "interrupted: the regrade is partial. Regrade again: evalrun regrade" in said
    log = RunLog.open(regraded)
    assert log.state().describe() == "partial 1/2 (missing cells: 002-slow#0)"
    assert log.saved_summary is not None
    assert evalrun("show", str(regraded)).returncode == 0
    resumed = evalrun(f"resume={regraded}")
    assert resumed.returncode == 2 and "is a regrade of" in resumed.stderr
