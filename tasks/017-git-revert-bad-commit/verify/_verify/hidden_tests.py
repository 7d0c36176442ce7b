import io
import os
import sys
import unittest
from contextlib import redirect_stdout
from decimal import Decimal

sys.path.insert(0, os.getcwd())


class Hidden(unittest.TestCase):
    longMessage = False

    def test_1_to_cents_rounds_half_away_from_zero(self):
        from shop.pricing import to_cents
        for raw, want in (("1.005", "1.01"), ("1.004", "1.00"), ("-1.005", "-1.01"), ("2.675", "2.68"), ("0.125", "0.13")):
            got = to_cents(Decimal(raw))
            self.assertEqual(str(got), want, f"to_cents({raw}) returned {got}, expected {want}: the rounding bug is still there")

    def test_2_totals(self):
        from shop.pricing import line_total, order_total
        self.assertEqual(str(line_total("0.335", 3)), "1.01", f"line_total('0.335', 3) = {line_total('0.335', 3)}, expected 1.01")
        got = order_total([("0.335", 3), ("4.99", 1)], "0.0725")
        self.assertEqual(str(got), "6.44", f"order_total(...) = {got}, expected 6.44")

    def test_3_discount_still_there(self):
        from shop.pricing import apply_discount
        got = apply_discount(Decimal("0.99"), 50)
        self.assertEqual(str(got), "0.50", f"apply_discount(0.99, 50) = {got}, expected 0.50")

    def test_4_cli_still_there(self):
        from shop import __version__
        from shop.cli import main
        self.assertEqual(__version__, "1.3.0", "shop.__version__ is no longer 1.3.0")
        buf = io.StringIO()
        with redirect_stdout(buf):
            main(["0.335:3", "4.99:1", "--tax", "0.2", "--discount", "10"])
        self.assertEqual(buf.getvalue().strip(), "6.48", f"python3 -m shop.cli printed {buf.getvalue().strip()!r}, expected '6.48'")


if __name__ == "__main__":
    res = unittest.main(exit=False, verbosity=0).result
    for _, tb in res.failures + res.errors:
        last = tb.strip().splitlines()[-1]
        print("DETAIL: " + (last[len("AssertionError: "):] if last.startswith("AssertionError: ") else last))
    sys.exit(0 if res.wasSuccessful() else 1)
