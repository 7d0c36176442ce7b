"""Planning: composing the config, selecting tasks and refusing bad selections before any run."""

from __future__ import annotations

import pytest

from evalrun.cli.hydra import compose_config
from evalrun.errors import UsageError
from evalrun.run.plan import build


@pytest.fixture
def suite(make_task):
    make_task("001-py-easy", spec={"tags": ["python"], "difficulty": "easy"})
    make_task("002-git-hard", spec={"tags": ["git"], "difficulty": "hard"})
    make_task("003-py-git-hard", spec={"tags": ["python", "git"], "difficulty": "hard"})
    return make_task("004-sql-medium", spec={"tags": ["sql"], "difficulty": "medium"}).parent


def plan_for(suite, *overrides):
    return build(compose_config([f"tasks_dir={suite}", "run_dir=/tmp/evalrun-plan", *overrides]))


def ids(plan):
    return [t.id for t in plan.tasks]


def test_defaults_select_everything_once(suite):
    plan = plan_for(suite)
    assert ids(plan) == ["001-py-easy", "002-git-hard", "003-py-git-hard", "004-sql-medium"]
    assert len(plan.cells) == 4
    assert plan.backend.name == "local" and plan.agent.name == "oracle"


def test_trials_multiply_cells(suite):
    plan = plan_for(suite, "trials=5")
    assert len(plan.cells) == 20
    assert {trial for _, trial in plan.cells} == {0, 1, 2, 3, 4}


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["tags=python"], ["001-py-easy", "003-py-git-hard"]),
        (["tags=[python,git]", "difficulty=hard"], ["002-git-hard", "003-py-git-hard"]),
        (["difficulty=[easy,medium]"], ["001-py-easy", "004-sql-medium"]),
        (["ids=[004-sql-medium,001-py-easy]"], ["001-py-easy", "004-sql-medium"]),
        (["limit=3"], ["001-py-easy", "002-git-hard", "003-py-git-hard"]),
        (["slice=smoke"], ["001-py-easy"]),
        (["slice=smoke", "difficulty=hard"], ["002-git-hard", "003-py-git-hard"]),
    ],
)
def test_selection(suite, overrides, expected):
    assert ids(plan_for(suite, *overrides)) == expected


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["ids=[001-py-esy]"], "unknown task id '001-py-esy' (did you mean 001-py-easy?)"),
        (["difficulty=extreme"], "difficulty: 'extreme' is not one of easy, hard, medium"),
        (["tags=nothing"], "tags: no task has the tag nothing"),
        (["limit=0"], "limit: expected a positive number"),
        (["trials=0"], "trials: expected a positive number"),
        (["timeouts.setup_s=0"], "timeouts.setup_s: expected a positive number of seconds, got 0"),
        (["timeouts.verify_s=-1"], "timeouts.verify_s: expected a positive number of seconds"),
        (["max_retries=-1"], "max_retries: expected 0 or more, got -1"),
        (["retry_backoff_s=-0.5"], "retry_backoff_s: expected 0 or more seconds, got -0.5"),
    ],
)
def test_bad_selection_is_a_usage_error(suite, overrides, message):
    with pytest.raises(UsageError) as err:
        plan_for(suite, *overrides)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("trialz=3", "unknown key 'trialz' (did you mean trials?)"),
        ("sandbox.imagee=x", "unknown key 'sandbox.imagee'"),
        ("trials=many", "trials: expected a whole number, got 'many'"),
        ("sandbox=nonesuch", "sandbox=nonesuch: no such option (options: local, bwrap, "),
    ],
)
def test_config_mistakes_fail_at_compose_time(suite, override, message):
    with pytest.raises(UsageError) as err:
        plan_for(suite, override)
    assert str(err.value).startswith(message)


def test_plan_json_has_fingerprints_and_cells(suite):
    plan = plan_for(suite, "trials=2", "tags=sql")
    data = plan.to_plan_file()
    assert data.cells == 2 and data.kind == "tasks" and data.schema_version == 1
    assert data.tasks[0].id == "004-sql-medium"
    assert len(data.tasks[0].fingerprint) == 64


def test_resolved_config_is_redacted(suite):
    plan = plan_for(suite)
    assert plan.config["trials"] == 1
    assert plan.config["tasks_dir"] == str(suite)
    assert "${" not in str(plan.config)


def test_an_unresolvable_interpolation_is_a_usage_error_naming_the_key(suite):
    with pytest.raises(UsageError) as err:
        plan_for(suite, "agent=command", "agent.cmd=my-agent ${NOT_A_KEY}")
    assert "Interpolation key 'NOT_A_KEY' not found" in str(err.value)
    assert "agent.cmd" in str(err.value)


def test_a_task_whose_setup_is_over_the_cap_is_refused_before_anything_runs(suite):
    with open(suite / "002-git-hard" / "setup" / "big.bin", "wb") as handle:
        handle.truncate(3 * 1024 * 1024)  # sparse: its apparent size is what a copy moves
    with pytest.raises(UsageError) as refused:
        plan_for(suite, "setup_max_mb=2")
    message = str(refused.value)
    assert message.startswith("setup_max_mb=2: these tasks copy more than that")
    assert "002-git-hard" in message and "holds 3 MiB" in message
    assert "001-py-easy" not in message
    assert len(plan_for(suite, "setup_max_mb=null").tasks) == 4
    assert len(plan_for(suite, "setup_max_mb=2", "ids=001-py-easy").tasks) == 1


def test_retry_backoff_is_a_config_key(suite):
    assert plan_for(suite).limits.retry_backoff_s == 1.0
    plan = plan_for(suite, "retry_backoff_s=0", "max_retries=3")
    assert plan.limits.retry_backoff_s == 0 and plan.limits.max_retries == 3


def test_a_key_a_whole_suite_repeats_is_one_warning_line_with_a_count(capsys):
    from evalrun.run.plan import say_loading

    warnings = [f"suite/t{i:02}/task.toml: unknown key [metadata] 'reward_type'" for i in range(19)]
    warnings += ["suite/t00/task.toml: unknown key [task] 'format'", "a loader's other warning"]
    say_loading(warnings, [])
    lines = [" ".join(line.split()) for line in capsys.readouterr().err.splitlines()]
    assert lines[1:] == [
        "unknown key [metadata] 'reward_type': in 19 files (suite/t00/task.toml, "
        "suite/t01/task.toml, suite/t02/task.toml and 16 more)",
        "suite/t00/task.toml: unknown key [task] 'format'",
        "a loader's other warning",
    ]
