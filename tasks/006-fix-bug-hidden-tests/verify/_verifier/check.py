"""Hidden checks for the intervals package, decided here; the package runs only in a child."""

import os
import sys
import unittest

sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402

W = None


def setUpModule():
    global W
    W = kit.Session("import intervals\nfrom intervals import Interval, gaps, merge_intervals, "
                    "parse_interval, total_length")


def tearDownModule():
    W.close()


class Test1Merge(unittest.TestCase):
    def test_contained_interval(self):
        """merge_intervals: an interval fully inside another must not shrink it"""
        self.assertEqual(W.call("merge_intervals", [(540, 720), (600, 630)]), [(540, 720)])
        self.assertEqual(W.call("merge_intervals", [(0, 100), (10, 20), (30, 40), (50, 60)]), [(0, 100)])

    def test_contained_then_extending(self):
        """merge_intervals: containment followed by an overlapping interval"""
        self.assertEqual(W.call("merge_intervals", [(0, 10), (2, 3), (9, 15), (20, 22)]),
                         [(0, 15), (20, 22)])

    def test_identical_and_same_start(self):
        """merge_intervals: duplicates and intervals sharing a start"""
        self.assertEqual(W.call("merge_intervals", [(5, 9), (5, 9), (5, 6)]), [(5, 9)])

    def test_overlap_touching_disjoint(self):
        """merge_intervals: overlapping and touching intervals merge, disjoint ones don't"""
        self.assertEqual(W.call("merge_intervals", [(7, 9), (1, 3), (3, 4), (2, 5)]), [(1, 5), (7, 9)])
        self.assertEqual(W.call("merge_intervals", [(1, 2), (3, 4)]), [(1, 2), (3, 4)])

    def test_empty_inputs(self):
        """merge_intervals: empty input and zero-length intervals"""
        self.assertEqual(W.call("merge_intervals", []), [])
        self.assertEqual(W.call("merge_intervals", [(4, 4), (1, 2)]), [(1, 2)])

    def test_returns_intervals(self):
        """merge_intervals returns a list of Interval objects"""
        self.assertEqual(W.value("type(merge_intervals([(1, 2)])).__name__"), "list")
        self.assertTrue(W.value("isinstance(merge_intervals([(1, 2)])[0], Interval)"))

    def test_input_not_modified(self):
        """merge_intervals must not modify the list it is given"""
        W.exec("data = [(9, 12), (1, 3), (2, 4)]\nmerge_intervals(data)")
        self.assertEqual(W.value("data"), [(9, 12), (1, 3), (2, 4)])

    def test_any_iterable(self):
        """merge_intervals must accept tuples and generators, not just lists"""
        self.assertEqual(W.value("merge_intervals(((3, 4), (1, 2)))"), [(1, 2), (3, 4)])
        self.assertEqual(W.value("merge_intervals(iv for iv in [(2, 6), (1, 3)])"), [(1, 6)])


class Test2Report(unittest.TestCase):
    def test_total_length_nested(self):
        """total_length: nested bookings are counted once"""
        self.assertEqual(
            W.value("total_length([parse_interval('09:00-12:00'), parse_interval('10:00-10:30')])"), 180)
        self.assertEqual(W.call("total_length", [(0, 10), (2, 3), (9, 15)]), 15)

    def test_total_length_basic(self):
        """total_length: unchanged for simple cases"""
        self.assertEqual(W.call("total_length", []), 0)
        self.assertEqual(W.call("total_length", [(0, 10), (5, 15), (20, 25)]), 20)

    def test_gaps_nested(self):
        """gaps: no free time is reported inside a long booking"""
        got = W.value("[str(g) for g in gaps([parse_interval(t) for t in "
                      "('09:00-12:00', '10:00-10:30', '13:00-14:00')], 480, 1080)]")
        self.assertEqual(got, ["08:00-09:00", "12:00-13:00", "14:00-18:00"])

    def test_gaps_edges(self):
        """gaps: window edges and bookings outside the window"""
        self.assertEqual(W.call("gaps", [], 0, 10), [(0, 10)])
        self.assertEqual(W.call("gaps", [(0, 10)], 0, 10), [])
        self.assertEqual(W.call("gaps", [(-5, 2), (8, 20), (30, 40)], 0, 10), [(2, 8)])


class Test3Model(unittest.TestCase):
    def test_interval_api(self):
        """Interval and parse_interval keep their behaviour"""
        self.assertEqual(W.call("parse_interval", " 09:15 - 24:00 "), (555, 1440))
        self.assertEqual(W.value("parse_interval(' 09:15 - 24:00 ').length"), 885)
        self.assertEqual(W.value("str(parse_interval(' 09:15 - 24:00 '))"), "09:15-24:00")
        self.assertTrue(W.value("Interval(0, 5).overlaps(Interval(4, 6))"))
        self.assertFalse(W.value("Interval(0, 5).overlaps(Interval(5, 6))"))
        for bad in ("24:01-24:30", "10:60-11:00", "x", "12:00-11:00"):
            with self.assertRaises(ValueError, msg=f"parse_interval({bad!r})"):
                W.call("parse_interval", bad)

    def test_public_api(self):
        """the package exports stay the same"""
        self.assertEqual(W.value("sorted(intervals.__all__)"),
                         sorted(["Interval", "parse_interval", "merge_intervals", "total_length", "gaps"]))


if __name__ == "__main__":
    kit.main()
