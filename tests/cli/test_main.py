"""The `evalrun` command end to end, in a subprocess, the way a user runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.run.test_runner import in_flight, killing_strays, new_marker
from tests.sandbox.conftest import backend_params, build_backend, host_pids_with


def evalrun(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        env=env,
        timeout=300,
    )


@pytest.fixture
def suite(make_task):
    make_task("001-answer")
    make_task(
        "002-file-exists",
        spec={"tags": ["files"], "difficulty": "medium"},
        files={
            "verify/verify.sh": '[ -f done.txt ] && echo PASS || { echo "FAIL: no done.txt"; exit 1; }\n',
            "solution/done.txt": "yes",
            "wrong/off-by-one/answer.txt": "41",
        },
    )
    return make_task(
        "003-setup-script",
        files={
            "setup/setup.sh": "echo 41 > answer.txt\n",
            "solution/solve.sh": "sed -i s/41/42/ answer.txt\necho 'changed 41 to 42'\n",
            "solution/answer.txt": "",
        },
        drop=("solution/answer.txt",),
    ).parent


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def test_oracle_passes_everything(suite, tmp_path):
    run_dir = tmp_path / "run"
    proc = evalrun(f"tasks_dir={suite}", f"run_dir={run_dir}", "trials=2")
    assert proc.returncode == 0, proc.stderr
    data = summary(run_dir)
    assert data["overall"]["pass_at"]["1"] == 1.0
    assert data["overall"]["pass_at"]["2"] == 1.0
    assert data["samples"] == 6
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    assert len(lines) == 6
    record = json.loads(lines[0])
    assert record["outcome"] == "pass" and record["phases"]["verify"] is not None
    assert "pass@1 1.000" in proc.stdout
    assert str(run_dir) in proc.stdout
    assert (run_dir / "config.yaml").is_file() and (run_dir / "plan.json").is_file()
    assert (run_dir / "samples" / "001-answer" / "0" / "verify.log").read_text().strip() == "PASS"


def test_kept_workspaces_are_named_at_the_end_on_the_record_and_in_show(suite, tmp_path):
    """keep_workspaces=true kept the workspace but never said where: the end of the run, the
    sample's record and `evalrun show` now name it."""
    import shutil

    run_dir = tmp_path / "run"
    proc = evalrun(
        f"tasks_dir={suite}", f"run_dir={run_dir}", "ids=[002-file-exists]", "keep_workspaces=true"
    )
    assert proc.returncode == 0, proc.stderr
    kept = Path(json.loads((run_dir / "samples.jsonl").read_text())["workspace_kept"])
    try:
        assert (kept / "done.txt").read_text() == "yes"  # the oracle's work, left for inspection
        assert f"workspaces kept (keep_workspaces=true): 1\n  002-file-exists #0  {kept}\n" in (
            proc.stdout
        )
        shown = evalrun("show", str(run_dir), "002-file-exists")
        assert f"kept: {kept}" in shown.stdout, shown.stderr
    finally:
        shutil.rmtree(kept.parent)

    again = evalrun(f"tasks_dir={suite}", f"run_dir={tmp_path / 'gone'}", "ids=[002-file-exists]")
    assert "workspaces kept" not in again.stdout
    assert json.loads((tmp_path / "gone" / "samples.jsonl").read_text())["workspace_kept"] is None


def test_solve_script_output_becomes_the_answer(suite, tmp_path):
    run_dir = tmp_path / "run"
    assert (
        evalrun(f"tasks_dir={suite}", f"run_dir={run_dir}", "ids=003-setup-script").returncode == 0
    )
    record = json.loads((run_dir / "samples.jsonl").read_text())
    assert record["outcome"] == "pass"
    assert record["agent"]["output"].strip() == "changed 41 to 42"


def test_noop_fails_everything_and_still_exits_zero(suite, tmp_path):
    run_dir = tmp_path / "run"
    proc = evalrun(f"tasks_dir={suite}", f"run_dir={run_dir}", "agent=noop")
    assert proc.returncode == 0, proc.stderr
    data = summary(run_dir)
    assert data["overall"]["pass_at"]["1"] == 0.0
    assert data["errors"] == 0
    record = json.loads((run_dir / "samples.jsonl").read_text().splitlines()[0])
    assert record["outcome"] == "fail"
    assert record["reason"].startswith("FAIL:")


def test_dry_run_prints_the_plan_and_runs_nothing(suite, tmp_path):
    run_dir = tmp_path / "run"
    proc = evalrun(f"tasks_dir={suite}", f"run_dir={run_dir}", "dry_run=true", "trials=3")
    assert proc.returncode == 0, proc.stderr
    assert "cells 9" in proc.stdout
    assert "001-answer" in proc.stdout
    assert not run_dir.exists()


def test_a_dry_run_creates_nothing_not_even_the_runs_folder(suite, tmp_path):
    """Left behind, `runs/` inside a tasks folder used to read as a broken task (exit 4)."""
    cwd = tmp_path / "somewhere"
    cwd.mkdir()
    proc = evalrun(f"tasks_dir={suite}", "dry_run=true", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert list(cwd.iterdir()) == []


def test_what_is_not_a_task_beside_tasks_never_fails_a_run(suite, tmp_path):
    """A `runs/` folder, an empty folder, `__pycache__` and dot-folders are not tasks; a broken
    folder the `ids=` filter leaves out is not the run's business."""
    (suite / "runs" / "20261201-101500-eval").mkdir(parents=True)
    (suite / "runs" / "20261201-101500-eval" / "samples.jsonl").write_text("{}\n")
    (suite / "empty").mkdir()
    (suite / "__pycache__").mkdir()
    (suite / ".cache" / "x").mkdir(parents=True)
    (suite / "zzz-broken").mkdir()
    (suite / "zzz-broken" / "task.yaml").write_text("id: zzz-broken\nprompt: [unclosed\n")
    run = evalrun(f"tasks_dir={suite}", f"run_dir={tmp_path / 'r1'}", "ids=[001-answer]")
    assert run.returncode == 0, run.stderr  # the gold agent passes; nothing skipped
    assert "skipped" not in run.stderr and "runs" not in run.stderr
    whole = evalrun(f"tasks_dir={suite}", f"run_dir={tmp_path / 'r2'}")
    assert whole.returncode == 4, whole.stderr  # unfiltered, the broken one is named
    assert "zzz-broken" in whole.stderr
    for name in ("runs", "empty", "__pycache__", ".cache"):
        assert f"skipped {name}" not in whole.stderr


def test_inside_a_projects_tasks_folder_evalrun_says_it_is_not_the_project(tmp_path):
    init = evalrun("init", str(tmp_path / "proj"), cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    inside = tmp_path / "proj" / "tasks"
    proc = evalrun("dry_run=true", cwd=inside)
    assert proc.returncode == 0, proc.stderr
    assert f"is inside the evalrun project {tmp_path / 'proj'} but not its root" in proc.stderr
    assert "bundled suite" in proc.stderr
    assert not (inside / "runs").exists()
    at_root = evalrun("dry_run=true", cwd=tmp_path / "proj")
    assert "not its root" not in at_root.stderr


def test_cfg_job_prints_the_composed_config(suite):
    proc = evalrun(f"tasks_dir={suite}", "trials=4", "--cfg", "job")
    assert proc.returncode == 0, proc.stderr
    assert "trials: 4" in proc.stdout
    assert "_target_: evalrun.sandbox.local.LocalBackend" in proc.stdout


def test_unknown_key_exits_2_with_hydras_message(suite):
    proc = evalrun(f"tasks_dir={suite}", "trialz=4")
    assert proc.returncode == 2
    assert "trialz" in proc.stderr


def test_a_non_positive_timeout_exits_2_before_anything_runs(suite, tmp_path):
    run_dir = tmp_path / "run"
    proc = evalrun(f"tasks_dir={suite}", f"run_dir={run_dir}", "agent=noop", "timeouts.agent_s=-5")
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == "error: timeouts.agent_s: expected a positive number of seconds, got -5.0"
    )
    assert not run_dir.exists()


def test_bad_task_folder_exits_2_naming_file_and_field(make_task, tmp_path):
    suite = make_task("001-bad", spec={"max_steps": -1}).parent
    run_dir = tmp_path / "run"
    proc = evalrun(f"tasks_dir={suite}", f"run_dir={run_dir}")
    assert proc.returncode == 2
    assert "001-bad/task.yaml" in proc.stderr and "max_steps" in proc.stderr
    assert not run_dir.exists()


def test_check_passes_honest_tasks(suite):
    proc = evalrun("check", f"tasks_dir={suite}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all 3 verifiers honest" in proc.stdout


def test_check_catches_a_dishonest_oracle(make_task):
    make_task("001-honest")
    suite = make_task(
        "002-always-passes",
        files={"verify/verify.sh": "echo PASS\n"},
    ).parent
    proc = evalrun("check", f"tasks_dir={suite}")
    assert proc.returncode == 1
    assert "002-always-passes" in proc.stdout
    assert "untouched: expected fail, got pass" in proc.stdout
    assert "001-honest" not in proc.stdout.split("dishonest verifier(s):")[-1]


def test_check_catches_an_oracle_too_weak_for_a_near_miss(make_task):
    suite = make_task(
        "001-weak",
        files={
            "verify/verify.sh": '[ -s answer.txt ] && echo PASS || { echo "FAIL: empty"; exit 1; }\n'
        },
    ).parent
    proc = evalrun("check", f"tasks_dir={suite}")
    assert proc.returncode == 1
    assert "wrong/off-by-one: expected fail, got pass" in proc.stdout


def test_start_up_and_a_dry_run_import_no_heavy_sdk(suite, tmp_path):
    code = (
        "import sys\n"
        "from evalrun.cli.hydra import compose_config\n"
        "from evalrun.run.plan import build\n"
        f"build(compose_config(['tasks_dir={suite}', 'run_dir={tmp_path / 'run'}', 'dry_run=true']))\n"
        "heavy = {'litellm', 'opik', 'pydantic_ai', 'modal', 'docker'} & set(sys.modules)\n"
        "print(sorted(heavy))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_help_lists_the_options_a_user_picks_and_the_composed_config():
    proc = evalrun("--help", "trials=3")
    assert proc.returncode == 0, proc.stderr
    groups = proc.stdout.split("== Configuration groups ==")[1].split("== Config ==")[0]
    listed = dict(line.split(": ", 1) for line in groups.splitlines() if ": " in line)
    assert listed["sandbox"] == "local, bwrap, docker, modal"  # the default first
    assert "_schema" not in proc.stdout  # the typed schemas are not options to pick
    assert "trials: 3" in proc.stdout.split("== Config ==")[1]  # composed with the overrides
    bad = evalrun("--help", "trialz=3")
    assert bad.returncode == 2 and "trialz" in bad.stderr


def test_hydra_mode_on_the_command_line_still_chooses_a_multirun(suite, tmp_path):
    sweep = tmp_path / "sweep"
    proc = evalrun("hydra.mode=MULTIRUN", "agent=oracle,noop", f"tasks_dir={suite}", "limit=1",
                   f"hydra.sweep.dir={sweep}")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (sweep / "0" / "summary.json").is_file() and (sweep / "1" / "summary.json").is_file()


@pytest.mark.parametrize("sandbox", backend_params(["local", "docker"]))
def test_sigterm_cancels_a_check_and_leaves_nothing_running(
    sandbox: str, make_task, tmp_path, request
):
    """`evalrun check` stopped by SIGTERM, as Ctrl-C stops it: its samples are cancelled, their
    processes and containers end, and it exits 143 without a traceback."""
    build_backend(sandbox, request)  # skips (fails in CI) without an engine
    marker = new_marker()
    suite = make_task("001-slow-setup", files={"setup/setup.sh": f"sleep {marker}\n"}).parent
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalrun.cli.main", "check", f"sandbox={sandbox}", f"tasks_dir={suite}"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    with killing_strays(marker):
        try:
            running = in_flight(sandbox, marker, proc)
            deadline = time.monotonic() + 180
            while running() < 1:  # a sample's setup script sleeps (docker: in its container)
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "the check never started a sample"
                time.sleep(0.1)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 143, out + err
        assert "stopped by SIGTERM: cancelling the check's samples" in err
        assert "Traceback" not in err and "verifiers honest" not in out
        assert running() == 0 and host_pids_with(marker) == []


def test_runs_are_named_by_the_options_chosen_in_ls_and_diff(tmp_path):
    """Two command agents of a project are `my_agent` and `other_agent`, not both `command`;
    `diff` says `agent: my_agent -> other_agent` before the resolved keys."""
    assert evalrun("init", str(tmp_path / "proj"), cwd=tmp_path).returncode == 0
    project = tmp_path / "proj"
    agents = project / "conf" / "agent"
    (agents / "other_agent.yaml").write_text(
        (agents / "my_agent.yaml").read_text().replace("my_agent does", "other_agent does")
    )
    for name in ("my_agent", "other_agent"):
        done = evalrun(f"agent={name}", f"run_dir=runs/{name}", cwd=project)
        assert done.returncode in (0, 1), done.stderr
    listed = evalrun("ls", cwd=project)
    assert "my_agent" in listed.stdout and "other_agent" in listed.stdout
    assert "command" not in listed.stdout
    compared = evalrun("diff", "runs/my_agent", "runs/other_agent", cwd=project)
    rows = [" ".join(line.replace("│", " ").split()) for line in compared.stdout.splitlines()]
    assert "agent my_agent other_agent" in rows, compared.stdout
