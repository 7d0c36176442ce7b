"""Verifier hardening's start-up hook, run by a real python: a deciding process takes the standard
library from the standard library, a program of the workspace's keeps its own imports, a module
the task ships under a standard-library name still wins, and the image's own sitecustomize runs."""

from __future__ import annotations

import builtins
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalrun.verifier import hardening
from evalrun.verifier.site import deciding
from evalrun.verifier.site import sitecustomize as hook

PLANTED = 'print("PLANTED"); raise SystemExit(0)\n'


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace whose `json.py` claims PASS for anyone who imports json from it."""
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "json.py").write_text(PLANTED)
    return root


def install(tmp_path: Path, hidden: list[str], own: frozenset[str] = frozenset()) -> Path:
    folder = tmp_path / "verifier-site"
    folder.mkdir(exist_ok=True)
    (folder / hardening.HOOK_FILE).write_text(hardening.render(hidden, own))
    return folder


def python(cwd: Path, site: Path | None, *args: str, stdin: str | None = None) -> str:
    env = {"PATH": os.environ["PATH"], "PYTHONDONTWRITEBYTECODE": "1"}
    if site is not None:
        env["PYTHONPATH"] = str(site)
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True
    )
    return (done.stdout + done.stderr).strip()


USES_JSON = "import json; print(json.dumps([1]))"


@pytest.mark.parametrize("how", ["-c", "stdin", "-m"])
def test_a_deciding_python_takes_json_from_the_stdlib(how: str, workspace: Path, tmp_path: Path):
    site = install(tmp_path, hidden=[])
    (workspace / "check_mod.py").write_text(USES_JSON + "\n")
    args = {"-c": ["-c", USES_JSON], "stdin": ["-"], "-m": ["-m", "check_mod"]}[how]
    stdin = USES_JSON if how == "stdin" else None
    assert python(workspace, None, *args, stdin=stdin) == "PLANTED"  # what the hook is for
    assert python(workspace, site, *args, stdin=stdin) == "[1]"


def test_a_hidden_script_decides_and_the_workspaces_own_program_does_not(
    workspace: Path, tmp_path: Path
):
    (workspace / "check.py").write_text(USES_JSON + "\n")
    (workspace / "solution.py").write_text(USES_JSON + "\n")
    site = install(tmp_path, hidden=[str(workspace / "check.py")])
    assert python(workspace, site, "check.py") == "[1]"
    assert python(workspace, site, "solution.py") == "PLANTED"


def test_a_module_the_task_ships_under_a_stdlib_name_still_wins(workspace: Path, tmp_path: Path):
    (workspace / "queue.py").write_text("class BoundedQueue:\n    pass\n")
    code = "import queue; print(queue.BoundedQueue.__name__)"
    hardened = install(tmp_path, hidden=[])
    assert "has no attribute 'BoundedQueue'" in python(workspace, hardened, "-c", code)
    shipped = install(tmp_path, hidden=[], own=frozenset({"queue"}))
    assert python(workspace, shipped, "-c", code) == "BoundedQueue"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_a_deciding_python_cannot_be_traced_by_its_children(workspace: Path, tmp_path: Path):
    """PR_GET_DUMPABLE (3) is 0 in a deciding process, 1 in the workspace's own program."""
    code = "import ctypes; print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))"
    (workspace / "solution.py").write_text(code + "\n")
    site = install(tmp_path, hidden=[])
    assert python(workspace, site, "-c", code) == "0"
    assert python(workspace, site, "solution.py") == "1"


def test_a_stdlib_module_missing_here_is_not_taken_from_elsewhere(tmp_path: Path):
    finder = deciding.StdlibFinder(frozenset({"json"}), [str(tmp_path / "empty")])
    with pytest.raises(ModuleNotFoundError, match="json"):
        finder.find_spec("json")
    assert finder.find_spec("json.decoder", path=["/somewhere"]) is None  # a submodule
    assert finder.find_spec("calc") is None  # not a stdlib name


def test_the_images_own_sitecustomize_still_runs(tmp_path: Path):
    image = tmp_path / "image-stdlib"
    image.mkdir()
    (image / "sitecustomize.py").write_text("import builtins\nbuiltins._evalrun_image_hook = 1\n")
    try:
        hook.run_image_hook([str(image)])
        assert getattr(builtins, "_evalrun_image_hook", None) == 1
    finally:
        vars(builtins).pop("_evalrun_image_hook", None)


def test_render_fills_in_the_settings_and_the_deciding_code():
    text = hardening.render(["/workspace/check.py", "/workspace/check.py"], frozenset({"queue"}))
    namespace: dict = {"__name__": "rendered"}
    exec(compile(text, "sitecustomize.py", "exec"), namespace)
    assert namespace["SETTINGS"] == {"hidden": ["/workspace/check.py"], "own": ["queue"]}
    assert "class StdlibFinder" in namespace["DECIDING"]


def test_own_modules_are_what_the_task_ships_not_its_overlays(tmp_path: Path):
    task = tmp_path / "001-task"
    files = {
        "task.yaml": "prompt: |\n  Write statistics.py with a median function.\n",
        "setup/queue.py": "",
        "solution/pkg/__init__.py": "",
        "solution/email/__init__.py": "",
        "verify/_checks/helper.py": "",
        "tamper/shadow/json.py": "",
        "wrong/near/calendar.py": "",
    }
    for rel, text in files.items():
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_text(text)
    skip = frozenset({task / "tamper" / "shadow", task / "wrong" / "near"})
    own = hardening.own_modules(task, "fingerprint", skip)
    assert own == {"statistics", "queue", "email"}  # stdlib names only: the rest never matters


def test_hidden_paths_become_sandbox_paths():
    paths = ["verify.sh", "_checks/check.py", "/tests/test.sh"]
    assert hardening.sandbox_paths(paths, "/workspace") == [
        "/workspace/verify.sh",
        "/workspace/_checks/check.py",
        "/tests/test.sh",
    ]


def test_the_hook_parses_on_the_oldest_python_an_image_may_have():
    """No syntax newer than 3.6 in what every verifier python imports (f-strings are 3.6)."""
    import ast

    for text in (hardening.render([], frozenset()), hardening._source("deciding.py")):
        ast.parse(textwrap.dedent(text), feature_version=(3, 6))
