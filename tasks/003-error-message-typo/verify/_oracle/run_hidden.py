"""Run hidden unittest modules and write a one-line verdict to a file.

usage: python3 _oracle/run_hidden.py VERDICT_FILE test_module [test_module ...]
The workspace (cwd) is importable; test modules live next to this file.
"""
import io
import os
import re
import sys
import unittest

EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b(:.*)?$")


def describe(test, tb):
    lines = tb.rstrip().splitlines()
    idx = None
    for i, line in enumerate(lines):
        if EXC_LINE.match(line):
            idx = i
    detail = (lines[idx] if idx is not None else lines[-1]).strip()
    if len(detail) > 240:
        detail = detail[:237] + "..."
    what = test.shortDescription() or test.id().split(".")[-1]
    return f"{what}: {detail}"


def main():
    verdict_path, names = sys.argv[1], sys.argv[2:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.getcwd())
    suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromName(n) for n in names)
    result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0, buffer=True).run(suite)
    problems = result.failures + result.errors
    if problems:
        verdict = f"FAIL: {describe(*problems[0])} ({len(problems)} of {result.testsRun} checks failed)"
    elif result.testsRun == 0:
        verdict = "FAIL: no checks ran"
    else:
        verdict = "PASS"
    with open(verdict_path, "w", encoding="utf-8") as fh:
        fh.write(verdict + "\n")


if __name__ == "__main__":
    main()
