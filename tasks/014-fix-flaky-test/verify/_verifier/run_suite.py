"""Run a unittest module from a directory, optionally several times; report JSON.

usage: run_suite.py <dir> <module> <reps> [test_method ...]
"""
import io
import json
import os
import sys
import unittest

workdir, module, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
only = set(sys.argv[4:])
os.chdir(workdir)
sys.path.insert(0, workdir)


def flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from flatten(t)
        else:
            yield t


report = {"names": [], "runs": 0, "failed": [], "skipped": [], "errors": [], "first_problem": ""}
try:
    tests = list(flatten(unittest.defaultTestLoader.loadTestsFromName(module)))
except Exception as exc:  # import error etc.
    report["errors"].append(f"cannot load {module}: {type(exc).__name__}: {exc}")
    print(json.dumps(report))
    sys.exit(0)
report["names"] = sorted({t.id().rsplit(".", 1)[-1] for t in tests})
for t in tests:
    if isinstance(t, unittest.loader._FailedTest):
        report["errors"].append(f"cannot load {t.id()}")
if only:
    tests = [t for t in tests if t.id().rsplit(".", 1)[-1] in only]
for _ in range(reps):
    result = unittest.TestResult()
    unittest.TestSuite(tests).run(result)
    report["runs"] += result.testsRun
    for t, tb in result.failures + result.errors + [(t, "unexpected success") for t in result.unexpectedSuccesses]:
        name = t.id().rsplit(".", 1)[-1]
        if name not in report["failed"]:
            report["failed"].append(name)
        if not report["first_problem"]:
            last = tb.strip().splitlines()[-1]
            if last.startswith("AssertionError: "):
                last = last[len("AssertionError: "):]
            report["first_problem"] = f"{name}: {last}"
    for t, why in result.skipped + [(t, "expected failure") for t, _ in result.expectedFailures]:
        name = t.id().rsplit(".", 1)[-1]
        if name not in report["skipped"]:
            report["skipped"].append(name)
print(json.dumps(report))
