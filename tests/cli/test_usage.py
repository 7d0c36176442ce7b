"""Usage errors as a person meets them: one line (and at most a hint), exit 2, no traceback.

Each case runs the real `evalrun` command in a subprocess from an empty folder and checks the
exact text on stderr - the form a user reads - and that nothing was run or left behind.
"""

from __future__ import annotations

import pytest

from tests.cli.test_main import evalrun

OPTIONS = "(options: local, bwrap, docker, modal)"
ADD_HINT = (
    "hint: '+' adds an entry only to a free-form mapping such as +agent.env.NAME=value; "
    "`evalrun --cfg job` shows every key"
)

CASES = [
    (
        ["sandbox=dokcer"],
        f"error: sandbox=dokcer: no such option; did you mean docker? {OPTIONS}",
        None,
    ),
    (
        ["agent=codr"],
        "error: agent=codr: no such option; did you mean coder? (options: oracle, aider, "
        "claude_code, coder, codex, command, gemini_cli, mini_swe_agent, noop, opencode, python)",
        None,
    ),
    (  # a typed schema is no option: it is not listed, and it does not run
        ["sandbox=docker_schema"],
        f"error: sandbox=docker_schema: no such option; did you mean docker? {OPTIONS}",
        None,
    ),
    (
        ["-m", "sandbox=local,docker_schema"],
        f"error: sandbox=docker_schema: no such option; did you mean docker? {OPTIONS}",
        None,
    ),
    (["trails=3"], "error: unknown key 'trails' (did you mean trials?)", None),
    (["+trails=3"], "error: unknown key 'trails' (did you mean trials?)", ADD_HINT),
    (
        ["timeouts.agnt_s=3"],
        "error: unknown key 'timeouts.agnt_s' (did you mean timeouts.agent_s?)",
        None,
    ),
    (
        ["+trials=3"],
        "error: 'trials' is already in the config: set it without '+' (trials=...)",
        None,
    ),
    (["trials=many"], "error: trials: expected a whole number, got 'many'", None),
    (["reward_threshold=x"], "error: reward_threshold: expected a number, got 'x'", None),
    (
        ["keep_workspaces=maybe"],
        "error: keep_workspaces: expected true or false, got 'maybe'",
        None,
    ),
    (
        ["tags=python,git"],
        "error: tags=python,git: a comma-separated value is a sweep; for a list write "
        "tags=[python,git]",
        "hint: to run once per value: evalrun -m tags=python,git",
    ),
    (
        ["--profile", "regression"],
        "error: unknown option '--profile' (did you mean profile=regression?)",
        "hint: evalrun --help lists the options",
    ),
    (
        ["--trials=3"],
        "error: unknown option '--trials' (did you mean trials=3?)",
        "hint: evalrun --help lists the options",
    ),
    (["lst"], "error: unknown command 'lst'; did you mean ls?", None),
    (["chek"], "error: unknown command 'chek'; did you mean check?", None),
    (["--bogus"], "error: unknown option '--bogus'", "hint: evalrun --help lists the options"),
    (["--cfg", "jbo"], "error: --cfg jbo: expected one of job, hydra, all", None),
    (
        ["trials=2", "oops"],
        "error: 'oops' is not an override: expected key=value",
        "hint: e.g. evalrun trials=3 tags=python; quote values with spaces or brackets",
    ),
    (
        ["tags=pyhton"],
        "error: tags: no task has the tag pyhton (did you mean python?)",
        "hint: tags in this suite: bugfix, files, python",
    ),
    (
        ["difficulty=hard"],
        "error: difficulty: no task is hard",
        "hint: difficulties in this suite: easy, medium",
    ),
    (
        ["difficulty=impossible"],
        "error: difficulty: 'impossible' is not one of easy, hard, medium",
        None,
    ),
    (
        ["difficulty=hrad"],
        "error: difficulty: 'hrad' is not one of easy, hard, medium; did you mean hard?",
        None,
    ),
]


@pytest.fixture
def small_suite(make_task):
    make_task("001-py", spec={"tags": ["python", "bugfix"]})
    return make_task("002-files", spec={"tags": ["files"], "difficulty": "medium"}).parent


@pytest.mark.parametrize(("args", "line", "hint"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_a_usage_error_is_one_line_exit_2_no_traceback(small_suite, tmp_path, args, line, hint):
    proc = evalrun(*args, f"tasks_dir={small_suite}", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [line] + ([hint] if hint else [])
    assert proc.stdout == ""
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*.yaml"))


def test_a_failed_sweep_leaves_no_folder(small_suite, tmp_path):
    """Jobs that all fail before they run leave no runs/multirun/<stamp>/ behind."""
    proc = evalrun(f"tasks_dir={small_suite}", "-m", "tags=pyhton,gti", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert [p for p in (tmp_path / "runs").rglob("*")] == [tmp_path / "runs" / "multirun"]


def test_adding_to_a_free_form_mapping_still_works(small_suite, tmp_path):
    args = ["agent=command", "agent.cmd=true", "+agent.env.MODE=fast", "--cfg", "job"]
    proc = evalrun(f"tasks_dir={small_suite}", *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "MODE: fast" in proc.stdout


def test_help_lists_options_without_schemas(tmp_path):
    proc = evalrun("--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "sandbox: local, bwrap, docker, modal" in proc.stdout
    assert "_schema" not in proc.stdout


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        (
            "check",
            "usage: evalrun check [-h] [--strict] [--tamper {all,verifier,harness,none}] "
            "[key=value ...]",
        ),
        ("gate", "usage: evalrun gate [-h] [--allow-partial] <run-dir> [key=value ...]"),
        ("ls", "usage: evalrun ls [-h] [runs_dir]"),
        ("diff", "usage: evalrun diff [-h] [--json] [--html PATH] <run-a> <run-b>"),
        ("show", "usage: evalrun show [-h] <run-dir> [<task-id>]"),
    ],
)
def test_every_command_has_help(tmp_path, command, usage):
    """(argparse, `evalrun.cli.arguments`); a misspelt command says which one was meant."""
    proc = evalrun(command, "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first_paragraph = proc.stdout.split("\n\n")[0]  # argparse wraps a long usage line
    assert " ".join(first_paragraph.split()) == usage
