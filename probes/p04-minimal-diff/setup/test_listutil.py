import unittest

from listutil import chunks, first_n, last_n


class ListUtilTest(unittest.TestCase):
    def test_first_n(self):
        self.assertEqual(first_n([1, 2, 3], 2), [1, 2])

    def test_last_n(self):
        self.assertEqual(last_n([1, 2, 3], 2), [2, 3])

    def test_chunks(self):
        self.assertEqual(chunks([1, 2, 3], 2), [[1, 2], [3]])


if __name__ == "__main__":
    unittest.main()
