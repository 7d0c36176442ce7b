import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.abspath("wordfreq.py")

with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
    CASES = json.load(fh)


def run(args, stdin_name=None):
    data = None
    if stdin_name:
        with open(os.path.join(HERE, "texts", stdin_name), "rb") as fh:
            data = fh.read()
    return subprocess.run([sys.executable, SCRIPT, *args], input=data, capture_output=True,
                          cwd=HERE, timeout=20)


def first_difference(got, want):
    got_lines, want_lines = got.splitlines(keepends=True), want.splitlines(keepends=True)
    for number, (g, w) in enumerate(zip(got_lines, want_lines), start=1):
        if g != w:
            return f"line {number}: got {g!r}, expected {w!r}"
    return f"got {len(got_lines)} lines, expected {len(want_lines)}"


class Test1DefaultOutputUnchanged(unittest.TestCase):
    def test_default_output_byte_for_byte(self):
        """without the new flag the output must be byte-for-byte what it was before"""
        for case in (c for c in CASES if c["kind"] == "default"):
            proc = run(case["args"], case["stdin"])
            label = "wordfreq.py " + " ".join(case["args"]) + (f" < {case['stdin']}" if case["stdin"] else "")
            self.assertEqual(proc.returncode, 0, f"{label} exited {proc.returncode}")
            got = proc.stdout.decode("utf-8", "replace")
            if got != case["expected"]:
                self.fail(f"default output changed for `{label}`: {first_difference(got, case['expected'])}")

    def test_count_words_default(self):
        """count_words(text) is still case-sensitive when called without the new option"""
        sys.path.insert(0, os.path.dirname(SCRIPT))
        try:
            import wordfreq
        finally:
            sys.path.pop(0)
        self.assertEqual(dict(wordfreq.count_words("Tea tea TEA 'tea'")), {"Tea": 1, "tea": 2, "TEA": 1})


class Test2IgnoreCase(unittest.TestCase):
    def test_a_ignore_case_output(self):
        """--ignore-case / -i counts words case-insensitively and reports them in lowercase"""
        for case in (c for c in CASES if c["kind"] == "ignore_case"):
            proc = run(case["args"], case["stdin"])
            label = "wordfreq.py " + " ".join(case["args"]) + (f" < {case['stdin']}" if case["stdin"] else "")
            self.assertEqual(proc.returncode, 0,
                             f"`{label}` exited {proc.returncode}: "
                             + " ".join(proc.stderr.decode(errors="replace").strip().splitlines()[-1:])[:200])
            got = proc.stdout.decode("utf-8", "replace")
            if got != case["expected"]:
                self.fail(f"wrong output for `{label}`: {first_difference(got, case['expected'])}")

    def test_help_mentions_flag(self):
        """--help documents both -i and --ignore-case"""
        proc = run(["--help"])
        self.assertEqual(proc.returncode, 0)
        out = proc.stdout.decode()
        self.assertIn("--ignore-case", out)
        self.assertIn("-i", out)

    def test_bad_usage_still_rejected(self):
        """unknown options and missing path still exit with status 2"""
        self.assertEqual(run(["--no-such-flag", "texts/speech.txt"]).returncode, 2)
        self.assertEqual(run([]).returncode, 2)


if __name__ == "__main__":
    unittest.main()
