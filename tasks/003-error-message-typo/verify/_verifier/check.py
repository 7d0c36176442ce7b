"""Hidden checks for settings.py, decided here; the workspace's code runs only in a child."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402

ORIGINAL = kit.read_hidden(os.path.join(HERE, "expected_settings.py.txt"))
W = None


def setUpModule():
    global W
    W = kit.Session("import settings")


def tearDownModule():
    W.close()


class Test1Messages(unittest.TestCase):
    def assertMessage(self, func, raw, expected):
        result = W.attempt(func, raw)
        self.assertEqual(result.error_type, "SettingsError", f"{func}({raw!r}) must raise SettingsError")
        self.assertEqual(result.error, expected)

    def test_port_message(self):
        """the port error message must read exactly 'Invalid port number: ...'"""
        self.assertMessage("settings.parse_port", "abc",
                           "Invalid port number: 'abc' (expected an integer between 1 and 65535)")
        self.assertMessage("settings.parse_port", "70000",
                           "Invalid port number: '70000' (expected an integer between 1 and 65535)")

    def test_timeout_message(self):
        """the timeout error message must read exactly 'Invalid timeout: ...'"""
        self.assertMessage("settings.parse_timeout", "-5",
                           "Invalid timeout: '-5' (expected a positive number of seconds)")
        self.assertMessage("settings.parse_timeout", "soon",
                           "Invalid timeout: 'soon' (expected a positive number of seconds)")

    def test_log_level_message(self):
        """the log-level error message must be unchanged"""
        self.assertMessage("settings.parse_log_level", "loud",
                           "Unknown log level: 'loud' (choose one of: debug, info, warning, error)")

    def test_a_no_typo_left(self):
        """no 'Invlaid' may remain in settings.py"""
        with open("settings.py", encoding="utf-8") as fh:
            left = [n for n, line in enumerate(fh, start=1) if "Invlaid" in line]
        if left:
            self.fail(f"'Invlaid' still appears in settings.py on line(s) {left}")

    def test_cli_shows_message(self):
        """the CLI must still print the (fixed) message on stderr and exit 2"""
        proc = kit.run([sys.executable, "cli.py", "port=0"], timeout_s=10)
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(proc.stderr,
                         "error: Invalid port number: '0' (expected an integer between 1 and 65535)\n")


class Test2Behaviour(unittest.TestCase):
    def test_valid_values(self):
        """valid settings must parse exactly as before"""
        self.assertEqual(W.call("settings.parse_settings", {}),
                         {"port": 8080, "timeout": 30.0, "log_level": "info"})
        self.assertEqual(W.call("settings.parse_settings",
                                {"port": "443", "timeout": "2.5", "log_level": " DEBUG "}),
                         {"port": 443, "timeout": 2.5, "log_level": "debug"})


class Test3NothingElseChanged(unittest.TestCase):
    def test_file_identical_apart_from_typo(self):
        """settings.py must be unchanged apart from the typo fix"""
        with open("settings.py", encoding="utf-8", newline="") as fh:
            got = fh.read().splitlines()
        want = ORIGINAL.splitlines()
        for number, (g, w) in enumerate(zip(got, want), start=1):
            if g != w:
                self.fail(f"settings.py line {number} differs from the original beyond the typo fix: "
                          f"got {g.strip()!r}, expected {w.strip()!r}")
        if len(got) != len(want):
            self.fail(f"settings.py has {len(got)} lines, the original has {len(want)}; only the typo should change")


if __name__ == "__main__":
    kit.main()
