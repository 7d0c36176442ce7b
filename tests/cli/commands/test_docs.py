"""`evalrun docs`: the guides a message sends a user to work in every install, by topic, not by
a path of evalrun's repository that a wheel user's project does not have."""

from __future__ import annotations

import re
from importlib import metadata

import pytest

from evalrun.cli.commands.docs import topics
from evalrun.cli.install import home_line
from evalrun.cli.main import main
from evalrun.honesty import fixes
from tests.conftest import REPO


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def test_docs_lists_every_packaged_guide_and_prints_one(capsys):
    code, out, _ = run(capsys, "docs")
    assert code == 0
    listed = dict(re.findall(r"^(\S+) .*\((/\S+\.md)\)$", out, re.M))
    assert set(listed) == {p.stem for p in (REPO / "docs").glob("*.md")} | {"verifiers"}
    assert listed["verifiers"].endswith("/bundled/tasks/README.md") or listed["verifiers"] == str(
        REPO / "tasks" / "README.md"
    )
    code, out, _ = run(capsys, "docs", "verifiers")
    assert code == 0
    assert "## Writing a verifier: decide where the agent's code cannot reach" in out


def test_an_unknown_topic_is_one_line_with_did_you_mean(capsys):
    code, _, err = run(capsys, "docs", "verifer")
    assert code == 2
    assert err.startswith("error: docs: no topic 'verifer'; did you mean verifiers? (topics: ")


def test_what_sends_a_user_to_a_guide_names_a_topic_not_a_repository_path():
    """The scaffold's verify.sh, check's fixes, --help and agent errors: each guide they cite is
    an `evalrun docs` topic; none names tasks/README.md or docs/*.md, which a wheel user's
    project does not have."""
    cited = [
        (REPO / "evalrun/cli/scaffold/templates/task/verify/verify.sh").read_text(),
        fixes.GUIDE,
        (REPO / "conf/config.yaml").read_text(),
        (REPO / "evalrun/agents/installed.py").read_text(),
    ]
    named = {t for text in cited for t in re.findall(r"evalrun docs ([a-z][\w-]*)", text)}
    assert named == {"verifiers", "agents"}
    assert named <= set(topics())
    for text in cited:
        assert not re.search(r"tasks/README\.md|docs/\w[\w-]*\.md", text)


def test_help_names_where_evalrun_lives_from_its_metadata(capsys, monkeypatch):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    # this package's metadata names no URL: no host is made up, the docs command is named
    said = next(line for line in out.splitlines() if "project URL" in line)
    assert said.startswith("evalrun's package metadata names no project URL; this copy: ")
    assert said.endswith("its docs ship with it: see `evalrun docs`") and "http" not in said

    class WithUrls:
        def get_all(self, name):
            return ["Repository, https://example.org/evalrun"] if name == "Project-URL" else None

    monkeypatch.setattr(metadata, "metadata", lambda name: WithUrls())
    assert home_line() == "evalrun lives at Repository: https://example.org/evalrun"
