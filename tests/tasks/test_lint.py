"""A task whose own scripts cannot run is refused when it loads, naming each fault by file:line.

Without this, a verify.sh with a bash syntax error (or a verifier helper that does not compile)
fails every sample of every agent as if the agent had failed, and the run exits 0.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalrun.errors import ExitCode, TaskFormatError
from evalrun.probes.format import load_probes
from evalrun.tasks import lint
from evalrun.tasks.loader import load_task, scan_suite
from tests.conftest import REPO
from tests.tasks.harbor.test_task import harbor_task

FIXTURES = REPO / "tests" / "fixtures"
BAD_BASH = "if true; then\n  echo ok\nfi\nfi\n"  # line 4: a second fi
BAD_PYTHON = "import sys\n\ndef main()\n    return 0\n"  # line 3: no colon


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test starts with no remembered passes (and writes none to the real home)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


def refusal(folder: Path) -> str:
    with pytest.raises(TaskFormatError) as err:
        load_task(folder)
    return str(err.value)


# --- each fault, with its file and line -------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "text", "where"),
    [
        ("verify/verify.sh", BAD_BASH, ":4: syntax error near unexpected token 'fi'"),
        ("verify/_verifier/run.sh", BAD_BASH, ":4: syntax error near unexpected token 'fi'"),
        ("setup/setup.sh", 'echo "open\n', ":1: unexpected EOF while looking for matching '\"'"),
        ("solution/solve.sh", "f() {\n  echo\n", ":3: syntax error: unexpected end of file"),
        ("wrong/off-by-one/solve.sh", "echo )\n", ":1: syntax error near unexpected token ')'"),
        ("tamper/rewrite/solve.sh", "case x in\n", ":2: syntax error: unexpected end of file"),
        ("verify/_verifier/check.py", BAD_PYTHON, ":3:11: expected ':'"),
        ("verify/lib/deep/util.py", "x = (1,\n", ":1:5: '(' was never closed"),
    ],
)
def test_each_fault_is_refused_with_its_file_and_line(make_task, rel, text, where):
    folder = make_task(files={rel: text})
    message = refusal(folder)
    assert message == f"{folder / rel}{where}"


def test_verify_sh_running_a_file_verify_does_not_have_is_refused(make_task):
    folder = make_task(
        files={
            "verify/verify.sh": "set -u\n# decides in its own process\nexec python3 -I _verifier/chek.py\n",
            "verify/_verifier/check.py": "raise SystemExit(0)\n",
        }
    )
    message = refusal(folder)
    assert (
        message == f"{folder}/verify/verify.sh:3: runs _verifier/chek.py, which verify/ does not have"
    )


def test_every_fault_of_a_task_is_reported_at_once(make_task):
    folder = make_task(
        files={
            "verify/verify.sh": "python3 _verifier/chek.py\n" + BAD_BASH,
            "verify/_verifier/check.py": BAD_PYTHON,
            "setup/setup.sh": "echo (\n",
            "solution/solve.sh": "done\n",
        }
    )
    lines = refusal(folder).splitlines()
    assert lines == [
        f"{folder}/setup/setup.sh:1: syntax error near unexpected token 'newline'",
        f"    {folder}/solution/solve.sh:1: syntax error near unexpected token 'done'",
        f"    {folder}/verify/_verifier/check.py:3:11: expected ':'",
        f"    {folder}/verify/verify.sh:1: runs _verifier/chek.py, which verify/ does not have",
        f"    {folder}/verify/verify.sh:5: syntax error near unexpected token 'fi'",
    ]


def test_a_fault_is_found_again_on_every_load_and_a_fix_loads(make_task):
    folder = make_task(files={"verify/verify.sh": BAD_BASH, "verify/check.py": BAD_PYTHON})
    first = refusal(folder)
    assert refusal(folder) == first  # only passes are remembered
    (folder / "verify/verify.sh").write_text("echo PASS\n")
    (folder / "verify/check.py").write_text("print('PASS')\n")
    load_task(folder)
    (folder / "verify/verify.sh").write_text(BAD_BASH)
    assert "verify.sh:4: syntax error" in refusal(folder)


# --- what loads ---------------------------------------------------------------------------------

GOOD_VERIFIER = textwrap.dedent(
    """\
    #!/usr/bin/env bash
    set -euo pipefail
    shopt -s extglob
    here=${0%/*}
    answer=$(< "$EVALRUN_ANSWER_FILE")
    declare -A seen=([a]=1)
    if [[ $answer =~ ^4[0-9]$ && -n ${seen[a]} ]]; then echo "close"; fi
    case $answer in
      @(41|43)) echo "near" ;&
      42) echo "exact" ;;
      *) : ;;
    esac
    diff <(sort answer.txt) <(printf '42\\n') >/dev/null || true
    cat > expected.txt <<EOF
    python3 _verifier/not-a-command.py
    $(( 1 << 3 ))
    EOF
    \tcat <<-'TABBED'
    \tbash _verifier/also-not-run.sh
    \tTABBED
    python3 - <<'PY'
    import sys
    print(f"{sys.version_info[0]}")
    PY
    python3 -I -c 'print("inline")'
    python3 calc.py 2 3                  # the agent's file
    python3 tests/test_calc.py           # tests/ is the workspace's too
    python3 "$here/_verifier/check.py"     # built at run time
    [ -f _verifier/optional.py ] && python3 _verifier/optional.py
    for f in _verifier/*.py; do python3 -m py_compile "$f"; done
    source _verifier/lib.sh
    cd "$here"                           # after a cd, paths are not read
    python3 _verifier/elsewhere.py
    exec python3 -I _verifier/check.py
    """
)


def test_a_correct_verifier_using_bash_features_loads(make_task):
    folder = make_task(
        files={
            "verify/verify.sh": GOOD_VERIFIER,
            "verify/_verifier/check.py": "import sys\nsys.exit(0)\n",
            "verify/_verifier/lib.sh": "say() { printf '%s\\n' \"$*\"; }\n",
            "verify/tests/test_hidden.py": "assert True\n",
            "setup/tests/test_calc.py": "assert True\n",
            "setup/setup.sh": 'git init -q . && git add -A && git commit -qm "start" || true\n',
            "solution/solve.sh": "echo 42 > answer.txt\necho 'wrote 42'\n",
        }
    )
    assert bash_n_ok(folder / "verify/verify.sh")  # the fixture itself: bash -n agrees
    assert load_task(folder).id == "001-answer"


def test_files_the_agent_may_fix_are_not_checked(make_task):
    folder = make_task(
        files={
            "setup/deploy.sh": BAD_BASH,  # the task may be to fix these
            "setup/app.py": BAD_PYTHON,
            "solution/deploy.sh": "echo fixed\n",
        }
    )
    assert load_task(folder).id == "001-answer"


def test_scripts_and_python_are_read_never_run(make_task, tmp_path):
    marker = tmp_path / "ran"
    folder = make_task(
        files={
            "verify/verify.sh": f"touch {marker}-verify\necho PASS\n",
            "setup/setup.sh": f"touch {marker}-setup\n}}\ntouch {marker}-after-brace\n",
            "verify/_verifier/check.py": f"open({str(marker)!r} + '-py', 'w')\n",
        }
    )
    assert "setup.sh:2: syntax error near unexpected token '}'" in refusal(folder)
    assert list(tmp_path.glob("ran*")) == []
    assert not (folder / "verify/_verifier/__pycache__").exists()


def test_a_cache_that_cannot_be_written_changes_nothing(make_task, monkeypatch, tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(not_a_dir))
    good = make_task("001-answer")
    assert load_task(good).id == "001-answer"
    bad = make_task("002-bad", files={"verify/verify.sh": BAD_BASH})
    assert "verify.sh:4: syntax error" in refusal(bad)


def test_what_passed_is_remembered_per_checker(make_task, fresh_cache):
    load_task(make_task(files={"verify/check.py": "print(1)\n"}))
    names = sorted(p.name for p in fresh_cache.joinpath("evalrun").iterdir())
    assert names[0] == "compiled-py{}.{}.txt".format(*sys.version_info[:2])
    assert names[1].startswith("parsed-bash-")


# --- the screen agrees with bash -n -----------------------------------------------------------

SHELL_CORPUS = {
    "if-no-fi": "if true; then\n  echo\n",
    "stray-fi": BAD_BASH,
    "stray-brace": "echo a\n}\n",
    "open-quote": "echo 'abc\n",
    "bad-case": "case $1 in\n a) echo ;;\n",
    "do-without-for": "do echo; done\n",
    "unclosed-subst": "x=$(echo a\n",
    "brace-then-open-function": "echo a\n}\nf() {\n  echo b\n",
    "crlf": "if true; then\r\n  echo\r\nfi\r\n",
    "extglob-unset": "rm -f !(keep)\n",
    "ok-heredoc-unterminated": "cat <<EOF\nhello\n",
    "ok-extglob-set": "shopt -s extglob\nrm -f !(keep)\n",
    "ok-plain": 'set -e\nfor x in a b; do echo "$x"; done\n',
    "ok-coproc": 'coproc cat\necho hi >&"${COPROC[1]}"\n',
}


def bash_n_ok(path: Path) -> bool:
    extglob = ["-O", "extglob"] if "extglob" in path.read_text() else []
    argv = ["bash", *extglob, "-n", str(path)]
    return subprocess.run(argv, capture_output=True).returncode == 0


@pytest.mark.parametrize("name", sorted(SHELL_CORPUS))
def test_the_one_process_screen_refuses_what_bash_n_refuses(tmp_path, name):
    script = tmp_path / f"{name}.sh"
    script.write_bytes(SHELL_CORPUS[name].encode())
    faults = lint.bash_faults([script])
    assert (faults == []) is bash_n_ok(script)
    assert name.startswith("ok-") is bash_n_ok(script)  # the corpus says what it tests


# --- Harbor: test.sh only --------------------------------------------------------------------


def test_harbor_test_sh_with_a_syntax_error_is_refused(tmp_path):
    folder = harbor_task(
        tmp_path, files={"tests/test.sh": "echo 1 > $VERIFIER_DIR/reward.txt\n" + BAD_BASH}
    )
    assert refusal(folder) == f"{folder}/tests/test.sh:5: syntax error near unexpected token 'fi'"


def test_harbor_step_test_sh_with_a_syntax_error_is_refused(tmp_path):
    folder = tmp_path / "multi-step"
    shutil.copytree(FIXTURES / "harbor-suite" / "multi-step", folder)
    step_test = folder / "steps" / "implement" / "tests" / "test.sh"
    step_test.write_text(step_test.read_text() + "done\n")
    lines = step_test.read_text().count("\n")
    expected = f"{step_test}:{lines}: syntax error near unexpected token 'done'"
    assert refusal(folder) == expected


def test_harbor_python_tests_run_on_the_images_python_so_are_not_compiled_here(tmp_path):
    newer = 'names = ["a"]\nprint(f"{", ".join(names)}")\n'  # PEP 701: a SyntaxError before 3.12
    folder = harbor_task(
        tmp_path, files={"tests/test_outputs.py": newer, "tests/helper.sh": BAD_BASH}
    )
    assert load_task(folder).format.name == "harbor"


# --- whole suites -------------------------------------------------------------------------------


def test_nothing_bundled_or_in_the_fixtures_is_refused():
    assert scan_suite(REPO / "tasks").unloadable == []
    assert len(load_probes(REPO / "probes")) == 13
    not_suites = {"atif"}  # the ATIF tests' JSON Schema, not tasks
    for suite in sorted(p for p in FIXTURES.iterdir() if p.is_dir() and p.name not in not_suites):
        broken = {u.task_id: u.reason for u in scan_suite(suite).unloadable}
        expected = {"broken"} if suite.name == "harbor-suite" else set()
        assert set(broken) == expected, broken
        assert "syntax error" not in json.dumps(broken)


def evalrun(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )


def test_the_run_skips_the_broken_task_runs_the_others_and_exits_4(make_task, tmp_path):
    make_task("001-answer")
    broken = make_task("002-broken", files={"verify/verify.sh": BAD_BASH})
    run_dir = tmp_path / "run"
    proc = evalrun(f"tasks_dir={broken.parent}", f"run_dir={run_dir}", "agent=oracle")
    assert proc.returncode == ExitCode.UNLOADABLE, proc.stderr
    reason = f"{broken}/verify/verify.sh:4: syntax error near unexpected token 'fi'"
    assert f"skipped 002-broken (cannot load): {reason}" in proc.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["skipped"] == [{"id": "002-broken", "kind": "cannot load", "reason": reason}]
    records = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert [(r["task_id"], r["outcome"]) for r in records] == [("001-answer", "pass")]

    check = evalrun("check", f"tasks_dir={broken.parent}")
    assert check.returncode == ExitCode.UNLOADABLE, check.stdout + check.stderr
    assert f"002-broken cannot load: {reason}" in check.stdout
