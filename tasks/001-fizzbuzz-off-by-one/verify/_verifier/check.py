"""Hidden checks for fizzbuzz.py, decided here; the workspace's code runs only in a child."""

import os
import sys
import unittest

sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402

EXPECTED_15 = ["1", "2", "Fizz", "4", "Buzz", "Fizz", "7", "8", "Fizz", "Buzz",
               "11", "Fizz", "13", "14", "FizzBuzz"]
W = None


def setUpModule():
    global W
    W = kit.Session("import fizzbuzz")


def tearDownModule():
    W.close()


class FizzBuzzFunction(unittest.TestCase):
    def test_fifteen(self):
        """fizzbuzz(15) must return labels for 1..15 inclusive"""
        self.assertEqual(W.call("fizzbuzz.fizzbuzz", 15), EXPECTED_15)

    def test_one(self):
        """fizzbuzz(1) must be ['1']"""
        self.assertEqual(W.call("fizzbuzz.fizzbuzz", 1), ["1"])

    def test_zero(self):
        """fizzbuzz(0) must be an empty list"""
        self.assertEqual(W.call("fizzbuzz.fizzbuzz", 0), [])

    def test_hundred(self):
        """fizzbuzz(100) must have 100 entries, starting at '1' and ending with 'Buzz'"""
        out = W.call("fizzbuzz.fizzbuzz", 100)
        self.assertEqual(len(out), 100)
        self.assertEqual(out[0], "1")
        self.assertEqual(out[-1], "Buzz")
        self.assertEqual(out, W.value("[fizzbuzz.label(i) for i in range(1, 101)]"))

    def test_label_unchanged(self):
        """label() must keep its existing behaviour"""
        self.assertEqual(W.value("[fizzbuzz.label(i) for i in (3, 5, 15, 30, 7)]"),
                         ["Fizz", "Buzz", "FizzBuzz", "FizzBuzz", "7"])


class FizzBuzzCli(unittest.TestCase):
    def run_cli(self, *args):
        return kit.run([sys.executable, "fizzbuzz.py", *args], timeout_s=10)

    def test_cli_fifteen(self):
        """`python3 fizzbuzz.py 15` must print exactly the 15 labels for 1..15"""
        proc = self.run_cli("15")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout, "\n".join(EXPECTED_15) + "\n")

    def test_cli_three(self):
        """`python3 fizzbuzz.py 3` must print 1, 2, Fizz"""
        self.assertEqual(self.run_cli("3").stdout, "1\n2\nFizz\n")

    def test_cli_bad_input(self):
        """a non-integer argument must still exit with status 2"""
        self.assertEqual(self.run_cli("abc").returncode, 2)


if __name__ == "__main__":
    kit.main()
