import unittest

from intervals import Interval, gaps, merge_intervals, parse_interval, total_length


class TestParse(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(parse_interval("09:00-10:30"), Interval(540, 630))
        self.assertEqual(str(Interval(540, 630)), "09:00-10:30")

    def test_parse_errors(self):
        for bad in ("9-10", "10:00-09:00", "25:00-26:00", "10:00"):
            with self.assertRaises(ValueError):
                parse_interval(bad)


class TestOps(unittest.TestCase):
    def test_merge_overlapping(self):
        self.assertEqual(merge_intervals([(1, 3), (2, 5), (7, 9)]),
                         [Interval(1, 5), Interval(7, 9)])

    def test_merge_touching(self):
        self.assertEqual(merge_intervals([(5, 7), (1, 5)]), [Interval(1, 7)])

    def test_total_length(self):
        self.assertEqual(total_length([(0, 10), (5, 15), (20, 25)]), 20)

    def test_gaps(self):
        self.assertEqual(gaps([(2, 4), (6, 8)], 0, 10),
                         [Interval(0, 2), Interval(4, 6), Interval(8, 10)])


if __name__ == "__main__":
    unittest.main()
