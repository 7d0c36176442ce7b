import sys
import unittest
from decimal import Decimal


class PackageImports(unittest.TestCase):
    def test_totals_use_package_money(self):
        import invoicer.money
        import invoicer.totals
        t = invoicer.totals.compute_totals([{"unit_price": "10.005", "qty": 2}], "0.1")
        self.assertIsInstance(t.total, invoicer.money.Money,
                              "compute_totals returns a Money class that is not invoicer.money.Money "
                              "(the module was imported twice under different names, e.g. via a sys.path hack)")
        self.assertEqual(t.total.amount, Decimal("22.02"))

    def test_no_top_level_module_leak(self):
        import invoicer.cli  # noqa: F401  (imports everything the CLI needs)
        leaked = [m for m in ("money", "totals", "tabular", "text_table", "render", "cli") if m in sys.modules]
        if leaked:
            self.fail(f"package modules were imported as top-level modules (sys.path hack?): {leaked}")

    def test_render_entry_point(self):
        from invoicer.render import render_invoice
        self.assertTrue(callable(render_invoice))


if __name__ == "__main__":
    res = unittest.main(exit=False, verbosity=0).result
    for _, tb in res.failures + res.errors:
        print("DETAIL: " + tb.strip().splitlines()[-1].replace("AssertionError: ", ""))
    sys.exit(0 if res.wasSuccessful() else 1)
