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
    ("spec", "field", "words"),
    [
        ({"colour": "red"}, "colour", "unknown key"),
        ({"max_steps": 0}, "max_steps", "greater than 0"),
        ({"max_steps": "many"}, "max_steps", "valid integer"),
        ({"difficulty": "extreme"}, "difficulty", "'easy', 'medium' or 'hard'"),
        ({"prompt": "   "}, "prompt", "must not be blank"),
        ({"tags": "python"}, "tags", "valid tuple"),
        ({"judges": [{"name": "x"}]}, "judges.0.task_introduction", "Field required"),
        ({"id": "002-other"}, "id", "does not match its folder"),
        (
            {"mcp_servers": [{"name": "a", "transport": "stdio"}]},
            "mcp_servers.0",
            "needs a command",
        ),
        (
            {"mcp_servers": [{"name": "a", "transport": "sse", "command": "x"}]},
            "mcp_servers.0",
            "needs a url",
        ),
        (
            {"mcp_servers": [{"name": "a", "transport": "stdio", "command": "x"}] * 2},
            "mcp_servers",
            "'a' repeats",
        ),
    ],
)
def test_bad_task_yaml_names_file_and_field(make_task, spec, field, words):
    folder = make_task(spec=spec)
    with pytest.raises(TaskFormatError) as err:
        load_task(folder)
    message = str(err.value)
    assert str(folder / "task.yaml") in message
    assert f"field '{field}'" in message
    assert words in message


def test_missing_required_field_is_named(make_task):
    folder = make_task()
    text = (folder / "task.yaml").read_text().replace("max_steps: 5\n", "")
    (folder / "task.yaml").write_text(text)
    with pytest.raises(TaskFormatError, match="field 'max_steps': Field required"):
        load_task(folder)


def test_yaml_that_is_not_a_mapping(make_task):
    folder = make_task(files={"task.yaml": "- just\n- a list\n"})
    with pytest.raises(TaskFormatError, match="expected a mapping of fields, got list"):
        load_task(folder)


def test_yaml_that_does_not_parse_quotes_the_line_with_a_caret(make_task):
    folder = make_task(files={"task.yaml": "id: x\nprompt: a: b\n"})
    with pytest.raises(TaskFormatError, match="not valid YAML") as err:
        load_task(folder)
    # parsed by libyaml for speed; its error is told by the pure-Python parser, which shows where
    assert "line 2, column 10:\n    prompt: a: b\n             ^" in str(err.value)


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
