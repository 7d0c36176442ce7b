import unittest

import intervals
from intervals import Interval, gaps, merge_intervals, parse_interval, total_length


def I(a, b):
    return Interval(a, b)


class Test1Merge(unittest.TestCase):
    def test_contained_interval(self):
        """merge_intervals: an interval fully inside another must not shrink it"""
        self.assertEqual(merge_intervals([(540, 720), (600, 630)]), [I(540, 720)])
        self.assertEqual(merge_intervals([(0, 100), (10, 20), (30, 40), (50, 60)]), [I(0, 100)])

    def test_contained_then_extending(self):
        """merge_intervals: containment followed by an overlapping interval"""
        self.assertEqual(merge_intervals([(0, 10), (2, 3), (9, 15), (20, 22)]), [I(0, 15), I(20, 22)])

    def test_identical_and_same_start(self):
        """merge_intervals: duplicates and intervals sharing a start"""
        self.assertEqual(merge_intervals([(5, 9), (5, 9), (5, 6)]), [I(5, 9)])

    def test_overlap_touching_disjoint(self):
        """merge_intervals: overlapping and touching intervals merge, disjoint ones don't"""
        self.assertEqual(merge_intervals([(7, 9), (1, 3), (3, 4), (2, 5)]), [I(1, 5), I(7, 9)])
        self.assertEqual(merge_intervals([(1, 2), (3, 4)]), [I(1, 2), I(3, 4)])

    def test_empty_inputs(self):
        """merge_intervals: empty input and zero-length intervals"""
        self.assertEqual(merge_intervals([]), [])
        self.assertEqual(merge_intervals([(4, 4), (1, 2)]), [I(1, 2)])

    def test_returns_intervals(self):
        """merge_intervals returns a list of Interval objects"""
        out = merge_intervals([(1, 2)])
        self.assertIsInstance(out, list)
        self.assertIsInstance(out[0], Interval)

    def test_input_not_modified(self):
        """merge_intervals must not modify the list it is given"""
        data = [(9, 12), (1, 3), (2, 4)]
        merge_intervals(data)
        self.assertEqual(data, [(9, 12), (1, 3), (2, 4)])

    def test_any_iterable(self):
        """merge_intervals must accept tuples and generators, not just lists"""
        self.assertEqual(merge_intervals(((3, 4), (1, 2))), [I(1, 2), I(3, 4)])
        self.assertEqual(merge_intervals(iv for iv in [(2, 6), (1, 3)]), [I(1, 6)])


class Test2Report(unittest.TestCase):
    def test_total_length_nested(self):
        """total_length: nested bookings are counted once"""
        bookings = [parse_interval("09:00-12:00"), parse_interval("10:00-10:30")]
        self.assertEqual(total_length(bookings), 180)
        self.assertEqual(total_length([(0, 10), (2, 3), (9, 15)]), 15)

    def test_total_length_basic(self):
        """total_length: unchanged for simple cases"""
        self.assertEqual(total_length([]), 0)
        self.assertEqual(total_length([(0, 10), (5, 15), (20, 25)]), 20)

    def test_gaps_nested(self):
        """gaps: no free time is reported inside a long booking"""
        day = (parse_interval("08:00-18:00").start, parse_interval("08:00-18:00").end)
        bookings = [parse_interval(t) for t in ("09:00-12:00", "10:00-10:30", "13:00-14:00")]
        self.assertEqual([str(g) for g in gaps(bookings, *day)],
                         ["08:00-09:00", "12:00-13:00", "14:00-18:00"])

    def test_gaps_edges(self):
        """gaps: window edges and bookings outside the window"""
        self.assertEqual(gaps([], 0, 10), [I(0, 10)])
        self.assertEqual(gaps([(0, 10)], 0, 10), [])
        self.assertEqual(gaps([(-5, 2), (8, 20), (30, 40)], 0, 10), [I(2, 8)])


class Test3Model(unittest.TestCase):
    def test_interval_api(self):
        """Interval and parse_interval keep their behaviour"""
        iv = parse_interval(" 09:15 - 24:00 ")
        self.assertEqual(iv, I(555, 1440))
        self.assertEqual(iv.length, 885)
        self.assertEqual(str(iv), "09:15-24:00")
        self.assertTrue(I(0, 5).overlaps(I(4, 6)))
        self.assertFalse(I(0, 5).overlaps(I(5, 6)))
        for bad in ("24:01-24:30", "10:60-11:00", "x", "12:00-11:00"):
            with self.assertRaises(ValueError):
                parse_interval(bad)

    def test_public_api(self):
        """the package exports stay the same"""
        self.assertEqual(sorted(intervals.__all__),
                         sorted(["Interval", "parse_interval", "merge_intervals", "total_length", "gaps"]))


if __name__ == "__main__":
    unittest.main()
