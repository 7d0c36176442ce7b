"""`evalrun ls`, `evalrun show` and `evalrun report` through the CLI entry point.

Most tests call `evalrun.cli.main.main` in-process (the same argv handling, exit codes and printing,
without a new interpreter per call); one runs the installed command in a subprocess.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from evalrun.cli.main import main
from tests.cli.test_main import evalrun as evalrun_subprocess
from tests.report.conftest import HOSTILE, run_suite


@pytest.fixture
def evalrun(capsys):
    """Run `evalrun <args>` in-process; returns (exit code, stdout, stderr) like a subprocess."""

    def call(*args: str) -> subprocess.CompletedProcess:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), exited.value.code, out, err)

    return call


def test_ls_lists_runs_newest_first_with_pass_at_1_including_multirun_jobs(evalrun, suite, run_dir):
    runs = run_dir.parent
    older = run_suite(suite, runs / "20240101-000000-noop", "agent=noop")
    job = run_suite(suite, runs / "multirun" / "20250102-000000-eval" / "0", "trials=2")
    os.utime(older / "summary.json", (1_700_000_000, 1_700_000_000))
    os.utime(job / "summary.json", (1_800_000_000, 1_800_000_000))
    proc = evalrun("ls", str(runs))
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if "complete" in line]
    assert len(lines) == 3
    assert "multirun/20250102-000000-eval/0" in lines[0]
    assert "20250101-000000-eval" in lines[1] and "0.556" in lines[1] and "4x3" in lines[1]
    assert "20240101-000000-noop" in lines[2] and "noop" in lines[2] and "0.000" in lines[2]


def keep_samples(run_dir, count: int) -> None:
    """As if the run had been killed after `count` samples (and before its summary)."""
    path = run_dir / "samples.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:count]))
    (run_dir / "summary.json").unlink(missing_ok=True)


def test_ls_says_complete_or_partial_with_the_missing_cells(evalrun, run_dir):
    (run_dir / "summary.json").unlink()  # killed after its last sample: still complete
    proc = evalrun("ls", str(run_dir.parent))
    assert proc.returncode == 0, proc.stderr
    assert "complete" in proc.stdout and "partial" not in proc.stdout
    keep_samples(run_dir, 5)
    proc = evalrun("ls", str(run_dir.parent))
    assert "partial 5/12 (missing cells: 002-flaky#2, 003-fail#0, 003-fail#1 and 4 more)" in (
        " ".join(proc.stdout.split()).replace("│ ", "").replace(" │", "")
    )


def test_ls_on_a_missing_folder_is_a_usage_error(evalrun, tmp_path):
    proc = evalrun("ls", str(tmp_path / "nope"))
    assert proc.returncode == 2
    assert "no such directory" in proc.stderr


def test_show_prints_the_terminal_report_again(run_dir):
    proc = evalrun_subprocess("show", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    assert "002-flaky flaky" in proc.stdout
    assert (
        "pass@1 0.556 [0.042, 0.972]  errors 3  pass@3 0.667 [0.044, 0.989]  "
        "pass^3 0.333 [0.011, 0.956]  flaky tasks 1"
        in proc.stdout
    )
    assert (
        "95% CI over 3 tasks (clustered-wilson): pass@1 [0.04, 0.97] · pass@3 [0.04, 0.99] · "
        "pass^3 [0.01, 0.96]" in proc.stdout
    )
    # why samples did not pass, grouped by task, after the tables
    lines = [" ".join(line.split()) for line in proc.stdout.splitlines()]
    assert "Why (4 failed, 3 harness errors):" in lines
    assert "fail 002-flaky #1 FAIL: answer.txt does not contain 42 " + HOSTILE in lines
    assert "fail 003-fail #0,#1,#2 FAIL: wrong answer red end" in lines
    assert "error 004-error #0,#1,#2 setup.sh failed (exit 3): boom" in lines


def test_show_of_one_task_prints_its_prompt_samples_reasons_and_changes(run_dir):
    proc = evalrun_subprocess("show", str(run_dir), "002-flaky")
    assert proc.returncode == 0, proc.stderr
    lines = [" ".join(line.split()) for line in proc.stdout.splitlines()]
    assert "prompt Write the number 42 into answer.txt." in lines
    trials = [line for line in lines if line.startswith("trial ")]
    assert [t.split()[2] for t in trials] == ["pass", "fail", "pass"]
    assert trials[1].endswith("FAIL: answer.txt does not contain 42 " + HOSTILE)
    assert "changed: 1 added (added answer.txt)" in lines
    assert "changed: no change" in lines  # trial 1 gave up without writing
    assert "fail 002-flaky #1 FAIL: answer.txt does not contain 42 " + HOSTILE in lines


def test_show_of_a_killed_run_summarises_what_was_recorded(evalrun, run_dir):
    (run_dir / "summary.json").unlink()
    proc = evalrun("show", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    assert "pass@1 0.556" in proc.stdout
    assert "run complete" in proc.stdout
    keep_samples(run_dir, 9)
    proc = evalrun("show", str(run_dir))
    assert "run partial 9/12 (missing cells: 004-error#0, 004-error#1, 004-error#2)" in proc.stdout


def test_report_rewrites_both_files_and_prints_their_paths(evalrun, run_dir):
    (run_dir / "report.html").unlink()
    (run_dir / "junit.xml").unlink()
    proc = evalrun("report", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(run_dir / "report.html"), str(run_dir / "junit.xml")]
    assert "002-flaky" in (run_dir / "report.html").read_text()
    assert ET.parse(run_dir / "junit.xml").getroot().get("tests") == "4"


def test_report_on_a_copied_run_dir_works_from_its_files_alone(evalrun, run_dir, tmp_path):
    copy = tmp_path / "elsewhere"
    shutil.copytree(run_dir, copy)
    shutil.rmtree(run_dir.parent.parent / "suite")  # the tasks are gone too
    proc = evalrun("report", str(copy))
    assert proc.returncode == 0, proc.stderr
    assert "002-flaky" in (copy / "report.html").read_text()


def test_report_on_a_multirun_folder_writes_the_sweep_page(evalrun, suite, tmp_path):
    sweep = tmp_path / "sweep"
    run_suite(suite, sweep / "0", "agent=oracle")
    run_suite(suite, sweep / "1", "agent=noop")
    proc = evalrun("report", str(sweep))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-1] == str(sweep / "report.html")
    assert 'href="1/report.html"' in (sweep / "report.html").read_text()


def test_show_and_report_refuse_a_folder_that_is_not_a_run(evalrun, tmp_path):
    for command in ("show", "report"):
        proc = evalrun(command, str(tmp_path))
        assert proc.returncode == 2
        assert "is not a run directory" in proc.stderr and "plan.json" in proc.stderr


def test_show_without_a_run_dir_says_how_to_call_it(evalrun):
    proc = evalrun("show")
    assert proc.returncode == 2
    assert "usage: evalrun show" in proc.stderr and "<run-dir>" in proc.stderr


def test_a_multirun_writes_a_sweep_report_beside_its_jobs(suite, tmp_path):
    sweep = tmp_path / "multirun"
    proc = evalrun_subprocess(
        "-m", f"tasks_dir={suite}", "agent=oracle,noop", "max_retries=0", "max_errors=1000",
        f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # a header per job naming what it sweeps; the sweep's table and page once, at the end
    lines = proc.stdout.splitlines()
    assert [line for line in lines if line.startswith("job ")] == [
        "job 0: agent=oracle",
        "job 1: agent=noop",
    ]
    assert lines.index("job 0: agent=oracle") < lines.index("job 1: agent=noop")
    assert proc.stdout.count("sweep report:") == 1 and proc.stdout.count(f"Sweep {sweep}") == 1
    assert lines[-1] == f"sweep report: {sweep / 'report.html'}"
    text = (sweep / "report.html").read_text()
    assert 'href="0/report.html"' in text and 'href="1/report.html"' in text
    assert (sweep / "1" / "junit.xml").is_file()


def test_report_is_refused_while_another_process_writes_the_run_and_ls_says_who(evalrun, run_dir):
    from tests.rundir.test_store import _holder

    holder = _holder(run_dir)
    try:
        before = (run_dir / "report.html").read_text()
        proc = evalrun("report", str(run_dir))
        assert proc.returncode == 2
        assert f"is being written by pid {holder.pid}" in " ".join(proc.stderr.split())
        assert (run_dir / "report.html").read_text() == before
        listed = evalrun("ls", str(run_dir.parent))
        assert f"being written by pid {holder.pid}" in " ".join(listed.stdout.split())
        assert evalrun("show", str(run_dir)).returncode == 0  # readers need no lock
    finally:
        holder.kill()
        holder.wait()
    assert evalrun("report", str(run_dir)).returncode == 0  # a dead holder's lock is taken over


def test_the_names_ls_shows_open_in_show_and_report_and_latest_is_the_newest(
    evalrun, suite, tmp_path, monkeypatch
):
    """What `ls` prints is what `show`/`report` take; `latest` is the run written last; and
    before the first run `ls` says so instead of failing."""
    monkeypatch.chdir(tmp_path)
    first = evalrun("ls")
    assert (first.returncode, first.stdout.strip()) == (
        0,
        "no runs yet in runs/ (every run lands there; start one with `evalrun`)",
    )
    older = run_suite(suite, tmp_path / "runs" / "20240101-000000-noop", "agent=noop")
    newer = run_suite(suite, tmp_path / "runs" / "20250101-000000-eval")
    os.utime(older / "plan.json", (1_700_000_000, 1_700_000_000))
    listed = evalrun("ls")
    assert "20240101-000000-noop" in listed.stdout
    shown = evalrun("show", "20240101-000000-noop")
    assert shown.returncode == 0, shown.stderr
    assert "pass@1 0.000" in shown.stdout
    latest = evalrun("show", "latest")
    assert latest.returncode == 0, latest.stderr
    assert "run directory: runs/20250101-000000-eval" in latest.stdout
    report = evalrun("report")  # latest, by default
    assert report.returncode == 0, report.stderr
    assert str(newer.relative_to(tmp_path) / "report.html") in report.stdout
    typo = evalrun("show", "20240101-000000-nop")
    assert typo.returncode == 2
    assert "did you mean 20240101-000000-noop?" in typo.stderr
