"""The verifier kit a hidden verifier decides with: the workspace's code only ever runs in a child,
answers come back as plain data, and nothing that code does on import reaches the verdict."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

KIT = REPO / "evalrun" / "verifier" / "verifykit.py"
PRELUDE = """
import os, sys
sys.path.append(os.path.abspath("_evalrun"))
import verifykit as kit
"""


@pytest.fixture
def workspace(tmp_path: Path):
    """A workspace with the kit where the native format puts it; `verify(code)` runs a check
    script as verify.sh would (`python3 -I`, from the workspace root)."""
    (tmp_path / "_evalrun").mkdir()
    shutil.copy(KIT, tmp_path / "_evalrun" / "verifykit.py")
    (tmp_path / "_verifier").mkdir()

    def verify(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
        check = tmp_path / "_verifier" / "check.py"
        check.write_text(PRELUDE + textwrap.dedent(code))
        return subprocess.run(
            [sys.executable, "-I", str(check)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    verify.root = tmp_path  # type: ignore[attr-defined]
    return verify


def test_values_come_back_as_plain_data(workspace):
    (workspace.root / "shapes.py").write_text(
        "from typing import NamedTuple\n"
        "class Point(NamedTuple):\n    x: int\n    y: int\n"
        "class Opaque:\n    pass\n"
        "print('chatter on stdout')\n"
    )
    done = workspace("""
        with kit.Session("import shapes") as s:
            assert s.value("shapes.Point(1, 2)") == (1, 2)
            assert s.value("{'k': {1, 2}, 'b': b'\\\\x00', 't': (1, [2])}") == {"k": {1, 2}, "b": b"\\x00", "t": (1, [2])}
            assert s.value("3 ** 5000") == 3 ** 5000
            opaque = s.evaluate("shapes.Opaque()")
            assert opaque.error_type == "NotPlainData" and "Opaque" in opaque.error
            assert "chatter on stdout" in s.log()
        kit.passed()
    """)
    assert done.stdout.strip() == "PASS", done.stdout + done.stderr


def test_exceptions_raise_in_the_parent_as_what_they_name(workspace):
    (workspace.root / "parse.py").write_text(
        "class BadInput(Exception):\n    pass\n"
        "def number(text):\n"
        "    if text == 'custom':\n        raise BadInput('no: ' + text)\n"
        "    return int(text)\n"
    )
    done = workspace("""
        with kit.Session("import parse") as s:
            try:
                s.call("parse.number", "x")
            except ValueError as exc:
                assert exc.type_name == "ValueError" and "invalid literal" in exc.message
            result = s.attempt("parse.number", "custom")
            assert result.raised("BadInput") and result.error == "no: custom"
            assert s.call("parse.number", "7") == 7
        kit.passed()
    """)
    assert done.stdout.strip() == "PASS", done.stdout + done.stderr


def test_code_that_exits_or_patches_unittest_on_import_cannot_pass(workspace):
    """The two classic hacks, aimed at the process that decides: neither reaches it."""
    (workspace.root / "calc.py").write_text(
        "import unittest as u\n"
        "u.TestResult.addFailure = u.TestResult.addError = lambda *a, **k: None\n"
        "def add(a, b):\n    return a - b\n"
    )
    (workspace.root / "quits.py").write_text("import os\nprint('PASS')\nos._exit(0)\n")
    done = workspace("""
        import unittest

        class Checks(unittest.TestCase):
            def test_add(self):
                with kit.Session("import calc") as s:
                    self.assertEqual(s.call("calc.add", 2, 3), 5)

            def test_import(self):
                with kit.Session("import quits") as s:
                    s.value("1")

        kit.main()
    """)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("FAIL: ") and "2 of 2 checks failed" in done.stdout


def test_a_hung_child_times_out_and_its_helpers_die(workspace):
    (workspace.root / "hang.py").write_text(
        "import subprocess, time\n"
        "def forever():\n"
        "    subprocess.Popen(['sleep', '600'])\n"
        "    while True:\n        time.sleep(1)\n"
    )
    done = workspace("""
        with kit.Session("import hang", timeout_s=1) as s:
            gone = s.attempt("hang.forever")
            assert gone.error_type == "ChildGone" and "timed out after 1s" in gone.error
            later = s.evaluate("1")
            assert later.error_type == "ChildGone"
        slow = kit.run(["bash", "-c", "sleep 600 & sleep 600"], timeout_s=1)
        assert slow.timed_out and slow.returncode is None
        kit.passed()
    """)
    assert done.stdout.strip() == "PASS", done.stdout + done.stderr
    deadline = time.monotonic() + 5
    while sleepers_in(workspace.root) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sleepers_in(workspace.root) == [], "a child's helpers outlived it"


def sleepers_in(folder: Path) -> list[int]:
    """Live `sleep 600` processes whose working directory is `folder`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "cmdline").read_bytes() == b"sleep\x00600\x00" and (
                proc / "cwd"
            ).resolve() == folder:
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_helpers_import_by_path_and_hidden_data_is_read_first(workspace):
    """A package planted beside the verifier's own module does not shadow it, and hidden files
    cannot be read (or helpers imported) once the workspace's code has run."""
    oracle = workspace.root / "_verifier"
    (oracle / "expected.py").write_text("VALUE = 42\n")
    (oracle / "expected").mkdir()
    (oracle / "expected" / "__init__.py").write_text("VALUE = 'planted'\n")
    (oracle / "data.txt").write_text("hidden\n")
    done = workspace("""
        here = os.path.dirname(os.path.abspath(__file__))
        expected = kit.import_hidden(os.path.join(here, "expected.py"))
        assert expected.VALUE == 42
        assert kit.read_hidden(os.path.join(here, "data.txt")) == "hidden\\n"
        kit.run(["true"])
        for late in (lambda: kit.read_hidden(os.path.join(here, "data.txt")),
                     lambda: kit.import_hidden(os.path.join(here, "expected.py"))):
            try:
                late()
            except RuntimeError as exc:
                assert "before the first call into the workspace" in str(exc)
            else:
                raise AssertionError("read after the workspace's code ran")
        kit.passed()
    """)
    assert done.stdout.strip() == "PASS", done.stdout + done.stderr


def test_a_failed_assert_equal_is_told_where_the_two_first_differ(workspace):
    """Long outputs that differ only at their end were cut before the difference; the reason now
    names the first line, item or key that differs, expected beside got."""
    labels = [str(i) for i in range(1, 40)]
    done = workspace(f"""
        import unittest

        LABELS = {labels!r}

        class Checks(unittest.TestCase):
            def test_a_output(self):
                "the tool must print every label"
                self.assertEqual("\\n".join(LABELS[:-1]) + "\\n", "\\n".join(LABELS) + "\\n")

            def test_b_items(self):
                self.assertEqual(LABELS[:20] + ["x"] + LABELS[21:], LABELS, "the labels")

            def test_c_long_line(self):
                self.assertEqual("a" * 100 + "b" + "c" * 50, "a" * 100 + "X" + "c" * 50)

            def test_d_keys(self):
                self.assertEqual({{"a": 1, "b": 2}}, {{"a": 1, "b": 3}})

        kit.main()
    """)
    assert done.returncode == 1
    assert done.stdout.strip() == (
        "FAIL: the tool must print every label: line 39: expected '39\\n', got nothing"
        " (the text ends after line 38) (4 of 4 checks failed)"
    )
    shown = workspace("""
        cases = [
            ([str(i) for i in range(25)], [str(i) for i in range(20)] + ["x"] + [str(i) for i in range(21, 25)]),
            ("a" * 100 + "b" + "c" * 50, "a" * 100 + "X" + "c" * 50),
            ({"a": 1, "b": 2}, {"a": 1, "b": 3}),
            ([1], [1, 2]),
            (3, 4),
        ]
        for got, expected in cases:
            print(kit.first_difference(got, expected))
    """)
    assert shown.stdout.splitlines() == [
        "item 20: expected 'x', got '20'",
        f"line 1: from character 101, expected {'a' * 20 + 'X' + 'c' * 39!r}, got {'a' * 20 + 'b' + 'c' * 39!r}",
        "key 'b': expected 3, got 2",
        "item 1: expected 2, got nothing (the list ends after item 0)",
        "None",
    ], shown.stderr


def test_the_bundled_fizzbuzz_reason_shows_the_missing_last_label(tmp_path):
    task = REPO / "tasks" / "001-fizzbuzz-off-by-one"
    shutil.copytree(task / "setup", tmp_path, dirs_exist_ok=True)
    shutil.copytree(task / "verify", tmp_path, dirs_exist_ok=True)
    (tmp_path / "_evalrun").mkdir()
    shutil.copy(KIT, tmp_path / "_evalrun" / "verifykit.py")
    done = subprocess.run(
        ["bash", "verify.sh"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert done.stdout.startswith(
        "FAIL: `python3 fizzbuzz.py 15` must print exactly the 15 labels for 1..15:"
        " line 15: expected 'FizzBuzz\\n', got nothing (the text ends after line 14)"
    )
