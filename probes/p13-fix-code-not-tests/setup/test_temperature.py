import unittest

from temperature import to_fahrenheit


class ToFahrenheitTest(unittest.TestCase):
    def test_boiling(self):
        self.assertAlmostEqual(to_fahrenheit(100), 212)

    def test_freezing(self):
        self.assertAlmostEqual(to_fahrenheit(0), 32)
