"""Hidden checks for mathutils.py, decided here; the workspace's code runs only in a child."""

import math
import os
import sys
import unittest

sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402

W = None


def setUpModule():
    global W
    W = kit.Session("import mathutils")


def tearDownModule():
    W.close()


class Test1Factorial(unittest.TestCase):
    def test_table_range(self):
        """factorial(n) must be correct for 0..7"""
        for n in range(8):
            self.assertEqual(W.call("mathutils.factorial", n), math.factorial(n), f"factorial({n})")

    def test_just_past_table(self):
        """factorial(n) must be correct for 8..30"""
        for n in range(8, 31):
            self.assertEqual(W.call("mathutils.factorial", n), math.factorial(n), f"factorial({n})")

    def test_large(self):
        """factorial(3000) must work (the docstring promises big inputs are fine)"""
        self.assertEqual(W.call("mathutils.factorial", 3000), math.factorial(3000))

    def test_negative(self):
        """factorial(-1) must raise ValueError"""
        with self.assertRaises(ValueError):
            W.call("mathutils.factorial", -1)

    def test_non_integers(self):
        """factorial() must raise TypeError for floats, strings and bools"""
        for bad in (2.5, 3.0, "4", True):
            with self.assertRaises(TypeError, msg=repr(bad)):
                W.call("mathutils.factorial", bad)


class Test2Combinatorics(unittest.TestCase):
    def test_binomial(self):
        """binomial(n, k) must match math.comb for a range of inputs"""
        for n in range(0, 25):
            for k in range(-1, n + 2):
                expected = math.comb(n, k) if k >= 0 else 0
                self.assertEqual(W.call("mathutils.binomial", n, k), expected, f"binomial({n}, {k})")

    def test_permutations(self):
        """permutations_count(n, k) must match math.perm"""
        for n in range(0, 20):
            for k in range(0, n + 1):
                self.assertEqual(W.call("mathutils.permutations_count", n, k), math.perm(n, k))
        self.assertEqual(W.call("mathutils.permutations_count", 3, 5), 0)


if __name__ == "__main__":
    kit.main()
