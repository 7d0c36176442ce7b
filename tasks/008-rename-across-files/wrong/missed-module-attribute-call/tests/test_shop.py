import unittest

from shop import Cart, format_currency, parse_money, render_invoice
from shop.report import daily_report


class MoneyTests(unittest.TestCase):
    def test_format_currency(self):
        self.assertEqual(format_currency(123456), "€1,234.56")
        self.assertEqual(format_currency(-5), "-€0.05")
        self.assertEqual(format_currency(100, symbol="$"), "$1.00")

    def test_parse_money(self):
        self.assertEqual(parse_money("€1,234.5"), 123450)
        self.assertEqual(parse_money("-3"), -300)


class CartTests(unittest.TestCase):
    def test_summary_and_invoice(self):
        cart = Cart().add("apples", 120, 3).add("honey", 650)
        self.assertEqual(cart.summary(), "2 item(s), total €10.10")
        self.assertIn("Total", render_invoice(cart, "Ada"))
        self.assertIn("Revenue: €10.10", daily_report([cart]))


if __name__ == "__main__":
    unittest.main()
