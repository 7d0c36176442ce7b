"""Hidden checks for wordfreq.py, decided here; the workspace's code runs only in a child."""

import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402

SCRIPT = os.path.abspath("wordfreq.py")
CASES = json.loads(kit.read_hidden(os.path.join(HERE, "cases.json")))
TEXTS = {name: kit.read_hidden(os.path.join(HERE, "texts", name), binary=True)
         for name in sorted(os.listdir(os.path.join(HERE, "texts")))}


def run(args, stdin_name=None):
    return kit.run([sys.executable, SCRIPT, *args], input=TEXTS[stdin_name] if stdin_name else None,
                   cwd=HERE, timeout_s=20, text=False)


def first_difference(got, want):
    got_lines, want_lines = got.splitlines(keepends=True), want.splitlines(keepends=True)
    for number, (g, w) in enumerate(zip(got_lines, want_lines), start=1):
        if g != w:
            return f"line {number}: got {g!r}, expected {w!r}"
    return f"got {len(got_lines)} lines, expected {len(want_lines)}"


def label(case):
    return "wordfreq.py " + " ".join(case["args"]) + (f" < {case['stdin']}" if case["stdin"] else "")


class Test1DefaultOutputUnchanged(unittest.TestCase):
    def test_default_output_byte_for_byte(self):
        """without the new flag the output must be byte-for-byte what it was before"""
        for case in (c for c in CASES if c["kind"] == "default"):
            proc = run(case["args"], case["stdin"])
            self.assertEqual(proc.returncode, 0, f"{label(case)} exited {proc.returncode}")
            got = proc.stdout.decode("utf-8", "replace")
            if got != case["expected"]:
                self.fail(f"default output changed for `{label(case)}`: {first_difference(got, case['expected'])}")

    def test_count_words_default(self):
        """count_words(text) is still case-sensitive when called without the new option"""
        with kit.Session("import wordfreq", path=[os.path.dirname(SCRIPT)]) as w:
            got = w.value("dict(wordfreq.count_words(\"Tea tea TEA 'tea'\"))")
        self.assertEqual(got, {"Tea": 1, "tea": 2, "TEA": 1})


class Test2IgnoreCase(unittest.TestCase):
    def test_a_ignore_case_output(self):
        """--ignore-case / -i counts words case-insensitively and reports them in lowercase"""
        for case in (c for c in CASES if c["kind"] == "ignore_case"):
            proc = run(case["args"], case["stdin"])
            self.assertEqual(proc.returncode, 0,
                             f"`{label(case)}` exited {proc.returncode}: "
                             + " ".join(proc.stderr.decode(errors="replace").strip().splitlines()[-1:])[:200])
            got = proc.stdout.decode("utf-8", "replace")
            if got != case["expected"]:
                self.fail(f"wrong output for `{label(case)}`: {first_difference(got, case['expected'])}")

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
    kit.main()
