"""The task loader: every way a folder can break the contract is caught, named and explained."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalrun.errors import TaskFormatError
from evalrun.tasks.base import Difficulty
from evalrun.tasks.loader import fingerprint, load_suite, load_task
from tests.conftest import REPO


def test_a_good_task_loads_with_its_fields(make_task):
    folder = make_task(spec={"tags": ["python", "bugfix"], "difficulty": "hard"})
    task = load_task(folder)
    assert task.id == "001-answer"
    assert task.spec.difficulty is Difficulty.hard
    assert task.spec.tags == ("python", "bugfix")
    assert len(task.fingerprint) == 64


def test_a_task_may_offer_mcp_servers_to_its_agent(make_task):
    server = {"name": "vault", "transport": "stdio", "command": "python3", "args": ["s.py"]}
    task = load_task(make_task(spec={"mcp_servers": [server]}))
    (loaded,) = task.spec.mcp_servers
    assert (loaded.name, loaded.command, loaded.args) == ("vault", "python3", ("s.py",))


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ({"colour": "red"}, "1:1: unknown key 'colour' (allowed: id, prompt, max_steps,"),
        ({"max_steps": 0}, "3:12: max_steps: expected a whole number above 0, got 0"),
        ({"max_steps": "many"}, "3:12: max_steps: expected a whole number above 0, got 'many'"),
        (
            {"difficulty": "hrad"},
            "1:13: difficulty: expected one of easy, medium, hard, got 'hrad' (did you mean 'hard'?)",
        ),
        (
            {"prompt": "   "},
            "4:9: prompt: expected the instructions for the agent, a non-blank text",
        ),
        ({"tags": "python"}, "5:7: tags: expected a list of tags, e.g. [python], got 'python'"),
        ({"tags": ["python", 3]}, "7:3: tags.1: input should be a valid string, got 3"),
        (
            {"judges": [{"name": "x"}]},
            "4:3: judges.0: missing key 'task_introduction' (what the task is, a non-empty text)",
        ),
        ({"id": "002-other"}, "2:5: id: '002-other' does not match its folder name '001-answer'"),
        (
            {"mcp_servers": [{"name": "a", "transport": "stdio"}]},
            "5:3: mcp_servers.0: MCP server 'a': transport 'stdio' needs a command, got",
        ),
        (
            {"mcp_servers": [{"name": "a", "transport": "sse", "command": "x"}]},
            "5:3: mcp_servers.0: MCP server 'a': transport 'sse' needs a url, got",
        ),
        (
            {"mcp_servers": [{"name": "a", "transport": "stdio", "command": "x"}] * 2},
            "5:1: mcp_servers: MCP server names must be unique, 'a' repeats",
        ),
    ],
)
def test_bad_task_yaml_says_where_and_what_in_plain_words(make_task, spec, said):
    folder = make_task(spec=spec)
    with pytest.raises(TaskFormatError) as err:
        load_task(folder)
    assert str(err.value).startswith(f"{folder / 'task.yaml'}:{said}")
    assert "Input should" not in str(err.value)


def test_three_mistakes_are_told_at_once_each_at_its_line(make_task):
    """The issue's file: a misspelt key, a bad choice and a tag that is not a list took four
    runs to find, each in pydantic's words. One load says all three, at their lines."""
    folder = make_task()
    task_file = folder / "task.yaml"
    task_file.write_text(
        "id: 001-answer\n"
        "prompt: |\n"
        "  Write the number 42 into answer.txt.\n"
        "max_step: 10\n"
        "difficulty: hrad\n"
        "tags: python\n"
    )
    with pytest.raises(TaskFormatError) as err:
        load_task(folder)
    assert str(err.value).splitlines() == [
        f"{task_file}:4:1: unknown key 'max_step' (did you mean 'max_steps'?)",
        f"    {task_file}:5:13: difficulty: expected one of easy, medium, hard, got 'hrad'"
        " (did you mean 'hard'?)",
        f"    {task_file}:6:7: tags: expected a list of tags, e.g. [python], got 'python'",
    ]  # and no "max_steps is required": the misspelling explains it


def test_a_missing_key_with_no_misspelling_is_named_with_what_it_takes(make_task):
    folder = make_task()
    text = (folder / "task.yaml").read_text().replace("max_steps: 5\n", "")
    (folder / "task.yaml").write_text(text)
    with pytest.raises(TaskFormatError) as err:
        load_task(folder)
    assert str(err.value) == (
        f"{folder / 'task.yaml'}:1:1: missing key 'max_steps' (a whole number above 0)"
    )


def test_a_misspelt_key_in_a_judge_is_told_under_its_judge(make_task):
    judge = {"name": "clear", "task_introduction": "x", "evaluation_critera": "y"}
    folder = make_task(spec={"judges": [judge]})
    with pytest.raises(TaskFormatError) as err:
        load_task(folder)
    assert str(err.value).endswith(
        "judges.0: unknown key 'evaluation_critera' (did you mean 'evaluation_criteria'?)"
    )
    assert "missing" not in str(err.value)


def test_yaml_that_is_not_a_mapping(make_task):
    folder = make_task(files={"task.yaml": "- just\n- a list\n"})
    with pytest.raises(TaskFormatError, match="expected a mapping of fields, got list"):
        load_task(folder)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("id: x\nprompt: a: b\n", "2:10: YAML syntax error: mapping values are not allowed here"),
        (
            'id: x\nprompt: "unterminated\nmax_steps: 3\n',
            "4:1: YAML syntax error: found unexpected end of stream"
            " (while scanning a quoted scalar at 2:9)",
        ),
    ],
)
def test_yaml_that_does_not_parse_is_one_line_at_its_place(make_task, text, said):
    folder = make_task(files={"task.yaml": text})
    with pytest.raises(TaskFormatError) as err:
        load_task(folder)
    # parsed by libyaml for speed; the place is the pure-Python parser's, as an editor counts
    assert str(err.value) == f"{folder / 'task.yaml'}:{said}"


def test_missing_verify_script(make_task):
    folder = make_task(drop=("verify/verify.sh",))
    with pytest.raises(TaskFormatError) as err:
        load_task(folder)
    assert "verify/verify.sh" in str(err.value)
    assert "required" in str(err.value)


def test_missing_task_yaml(make_task):
    folder = make_task(drop=("task.yaml",))
    with pytest.raises(TaskFormatError, match=r"task.yaml: missing"):
        load_task(folder)


def test_symlink_pointing_outside_the_task_is_refused(make_task, tmp_path):
    folder = make_task()
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    os.symlink(secret, folder / "setup" / "leak.txt")
    with pytest.raises(TaskFormatError, match="symlink points outside the task folder"):
        load_task(folder)


def test_symlink_inside_the_task_is_fine(make_task):
    folder = make_task()
    os.symlink("README.md", folder / "setup" / "alias.md")
    assert load_task(folder).id == "001-answer"


def test_suite_loads_sorted_and_rejects_a_bad_member(make_task):
    make_task("002-second")
    first = make_task("001-first")
    suite = first.parent
    assert [t.id for t in load_suite(suite)] == ["001-first", "002-second"]
    make_task("003-broken", spec={"difficulty": "impossible"})
    with pytest.raises(TaskFormatError, match="003-broken"):
        load_suite(suite)


def test_empty_or_missing_suite(tmp_path: Path):
    with pytest.raises(TaskFormatError, match="not a directory"):
        load_suite(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TaskFormatError, match="no task folders found"):
        load_suite(tmp_path / "empty")


def test_fingerprint_changes_with_content_and_mode_only(make_task):
    folder = make_task()
    before = fingerprint(folder)
    assert fingerprint(folder) == before
    (folder / "setup" / "README.md").write_text("changed\n")
    changed = fingerprint(folder)
    assert changed != before
    os.chmod(folder / "setup" / "README.md", 0o755)
    assert fingerprint(folder) != changed


def test_bundled_suite_loads():
    tasks = load_suite(REPO / "tasks")
    assert len(tasks) >= 5


def test_a_run_and_check_show_every_problem_of_a_skipped_task_file(make_task, tmp_path):
    from evalrun.errors import ExitCode
    from tests.tasks.test_lint import evalrun

    make_task("001-answer")
    broken = make_task("002-broken")
    (broken / "task.yaml").write_text(
        "id: 002-broken\nprompt: Write 42.\nmax_step: 10\ndifficulty: hrad\ntags: python\n"
    )
    task_file = broken / "task.yaml"
    said = [
        f"{task_file}:3:1: unknown key 'max_step' (did you mean 'max_steps'?)",
        f"    {task_file}:4:13: difficulty: expected one of easy, medium, hard, got 'hrad'"
        " (did you mean 'hard'?)",
        f"    {task_file}:5:7: tags: expected a list of tags, e.g. [python], got 'python'",
    ]
    run = evalrun(f"tasks_dir={broken.parent}", f"run_dir={tmp_path / 'run'}", "agent=oracle")
    assert run.returncode == ExitCode.UNLOADABLE, run.stderr
    assert "\n".join([f"skipped 002-broken (cannot load): {said[0]}", *said[1:]]) in run.stderr

    check = evalrun("check", f"tasks_dir={broken.parent}")
    assert check.returncode == ExitCode.UNLOADABLE, check.stdout + check.stderr
    assert "\n".join([f"002-broken cannot load: {said[0]}", *said[1:]]) in check.stdout
