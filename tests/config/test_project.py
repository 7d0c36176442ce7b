"""A user's own project: `evalrun init`, its config extending the packaged one, `evalrun info`,
`evalrun new-task`, and runs landing where the user is. Each runs `evalrun` in a subprocess from
the folder a user would be in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from evalrun.bundled import CONF_DIR, CONF_PACKAGE, TASKS_DIR
from evalrun.cli.scaffold import PROJECT_TEMPLATE
from evalrun.config.project import PACKAGED_CONFIG_NAME, group_origins, locate_config
from tests.conftest import REPO


def evalrun(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def only_run(project: Path) -> Path:
    (run_dir,) = (project / "runs").iterdir()
    return run_dir


@pytest.fixture
def project(tmp_path: Path) -> Path:
    proc = evalrun("init", "demo", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "demo"


def test_the_checkout_finds_its_bundled_data_through_the_package():
    assert CONF_DIR == REPO / "conf" and TASKS_DIR == REPO / "tasks"
    assert (CONF_DIR / "config.yaml").is_file()
    # the starter project names the packaged config by the package it really is
    searchpath = yaml.safe_load((PROJECT_TEMPLATE / "conf" / "evalrun.yaml").read_text())
    assert searchpath["hydra"]["searchpath"] == [f"pkg://{CONF_PACKAGE}"]


def test_init_writes_a_project_whose_starter_task_passes_and_is_honest(project: Path):
    assert (project / "conf" / "evalrun.yaml").is_file()
    assert (project / "tasks" / "001-word-count" / "verify" / "verify.sh").is_file()
    assert (project / ".gitignore").read_text().strip() == "runs/"

    run = evalrun(cwd=project)
    assert run.returncode == 0, run.stderr
    run_dir = only_run(project)  # under the project folder: where the user is
    summary = json.loads((run_dir / "summary.json").read_text())
    plan = json.loads((run_dir / "plan.json").read_text())
    assert summary["overall"]["pass_at"]["1"] == 1.0
    assert plan["tasks_dir"] == str(project / "tasks")
    assert [t["id"] for t in plan["tasks"]] == ["001-word-count"]
    assert plan["provenance"]["install"]["kind"] == "checkout"

    check = evalrun("check", cwd=project)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "all 1 verifiers honest" in check.stdout


def test_a_project_group_option_is_found_beside_the_packaged_ones(project: Path):
    run = evalrun("agent=my_agent", cwd=project)
    assert run.returncode == 0, run.stderr  # a low score is a result, not an error
    run_dir = only_run(project)
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert "conf/agent/my_agent.yaml" in config["agent"]["cmd"]  # the project's own option
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["overall"]["pass_at"]["1"] == 0.0  # the placeholder agent does nothing


def test_the_project_comes_first_on_the_search_path(project: Path):
    # The project's slice/smoke.yaml shadows evalrun's packaged slice/smoke.yaml.
    (project / "conf" / "slice" / "smoke.yaml").write_text(
        "# @package _global_\nids: [001-word-count]\nname: project-smoke\n"
    )
    proc = evalrun("slice=smoke", "--cfg", "job", cwd=project)
    assert proc.returncode == 0, proc.stderr
    cfg = yaml.safe_load(proc.stdout)
    assert cfg["name"] == "project-smoke" and cfg["ids"] == ["001-word-count"]
    assert cfg["limit"] is None  # nothing of the packaged smoke slice (limit: 5) got in


def test_the_project_config_can_change_a_packaged_default(project: Path):
    conf = project / "conf" / "evalrun.yaml"
    text = conf.read_text()
    assert "  # - override agent: my_agent" in text  # the template says how
    conf.write_text(text.replace("  # - override agent: my_agent", "  - override agent: my_agent"))
    proc = evalrun("--cfg", "job", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load(proc.stdout)["agent"]["_target_"].endswith("CommandAgent")


def test_info_says_where_every_option_comes_from(project: Path, monkeypatch):
    proc = evalrun("info", "agent=my_agent", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert f"project      {project}" in proc.stdout
    assert f"pkg://{CONF_PACKAGE}" in proc.stdout and str(CONF_DIR) in proc.stdout

    from evalrun.cli.hydra import compose_config

    monkeypatch.chdir(project)
    origins = {
        o.group: o
        for o in group_origins(compose_config(["agent=my_agent"], return_hydra_config=True))
    }
    assert (origins["agent"].chosen, origins["agent"].chosen_from) == ("my_agent", "project")
    assert (origins["sandbox"].chosen, origins["sandbox"].chosen_from) == ("local", "evalrun")
    assert origins["agent"].options["project"] == ["my_agent"]
    assert "oracle" in origins["agent"].options["evalrun"]
    assert origins["profile"].options["project"] == ["nightly"]
    assert origins["provider"].options["project"] == ["my_endpoint"]
    assert origins["slice"].options["project"] == ["quick"]


def test_outside_a_project_the_packaged_config_and_runs_land_here(tmp_path: Path):
    assert locate_config(tmp_path).config_name == PACKAGED_CONFIG_NAME
    proc = evalrun("ids=[001-fizzbuzz-off-by-one]", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads((only_run(tmp_path) / "plan.json").read_text())
    assert plan["tasks_dir"] == str(TASKS_DIR)
    assert Path(plan["run_dir"]).resolve().is_relative_to(tmp_path.resolve())


def test_new_task_scaffold_is_reported_unfinished_until_its_check_is_written(project: Path):
    made = evalrun("new-task", "002-my-task", cwd=project)
    assert made.returncode == 0, made.stderr
    folder = project / "tasks" / "002-my-task"
    for part in ("task.yaml", "setup", "verify/verify.sh", "solution", "wrong/near-miss"):
        assert (folder / part).exists(), part
    assert yaml.safe_load((folder / "task.yaml").read_text())["id"] == "002-my-task"
    assert "evalrun check ids=[002-my-task]" in made.stdout  # the next step, runnable as printed

    check = evalrun("check", "ids=[002-my-task]", cwd=project)
    assert check.returncode == 1
    assert "DISHONEST" in check.stdout
    assert "002-my-task gold: expected pass, got fail" in check.stdout
    assert "still the new-task placeholder" in check.stdout


def test_new_task_outside_a_project_says_which_tasks_dir_to_check(tmp_path: Path):
    made = evalrun("new-task", "t", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "tasks" / "t" / "task.yaml").is_file()
    assert "evalrun check tasks_dir=tasks ids=[t]" in made.stdout
    check = evalrun("check", "tasks_dir=tasks", "ids=[t]", cwd=tmp_path)
    assert check.returncode == 1 and "still the new-task placeholder" in check.stdout


@pytest.mark.parametrize(
    ("name", "expected"),
    [("../escape", "cannot be a task id"), ("a[b]", "'a[b]' cannot be a task id")],
)
def test_new_task_refuses_a_name_that_cannot_be_a_task_id(tmp_path: Path, name, expected):
    proc = evalrun("new-task", name, cwd=tmp_path)
    assert proc.returncode == 2
    assert expected in proc.stderr  # brackets printed as typed, not eaten as markup
    assert not (tmp_path / "tasks").exists() or not any((tmp_path / "tasks").iterdir())


def test_new_task_refuses_an_existing_folder(project: Path):
    proc = evalrun("new-task", "001-word-count", cwd=project)
    assert proc.returncode == 2 and "already exists" in proc.stderr


def test_init_never_overwrites(tmp_path: Path):
    (tmp_path / "README.md").write_text("my own readme\n")
    first = evalrun("init", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "README.md").read_text() == "my own readme\n"  # the folder's own wins
    assert "kept  README.md" in first.stdout
    again = evalrun("init", cwd=tmp_path)
    assert again.returncode == 2
    assert "conf/evalrun.yaml" in again.stderr and "nothing was written" in again.stderr


def test_help_in_a_project_lists_the_packaged_and_the_project_options(project: Path):
    proc = evalrun("--help", cwd=project)
    assert proc.returncode == 0, proc.stderr
    listing = proc.stdout.split("== Configuration groups ==")[1].split("== Config ==")[0]
    groups = dict(line.split(": ", 1) for line in listing.splitlines() if ": " in line)
    assert {"my_agent", "oracle", "coder"} <= set(groups["agent"].split(", "))
    assert {"local", "bwrap", "docker"} <= set(groups["sandbox"].split(", "))
