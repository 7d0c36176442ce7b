import importlib
import inspect
import os
import re
import subprocess
import sys
import unittest

OLD = "fmt" + "_money"          # spelled this way so this file never matches itself
NEW = "format_currency"
SKIP_DIRS = {".git", "__pycache__", "_oracle"}
SKIP_FILES = {"verify.sh"}

INVOICE_ADA = ("Invoice for Ada Lovelace\n\n"
               "3 x apples @ €1.20                             €3.60\n"
               "1 x honey @ €6.50                              €6.50\n"
               "2 x Big wheel of cheese @ €1,234.56        €2,469.12\n"
               "----------------------------------------------------\n"
               "Total                                      €2,479.22\n"
               "  of which VAT 21%                           €430.28")
REPORT = ("Carts: 2\nRevenue: €2,480.21\nAverage cart: €1,240.10\n"
          "  apples: 4\n  Big wheel of cheese: 2\n  honey: 1")
CLI_OUT = ("3 x apples @ €1.20 = €3.60\n"
           "1 x wine @ €1,250.50 = €1,250.50\n"
           "2 item(s), total €1,254.10\n"
           "Carts: 1\nRevenue: €1,254.10\nAverage cart: €1,254.10\n"
           "  apples: 3\n  wine: 1\n")


def workspace_files():
    for root, dirs, files in os.walk("."):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            if root == "." and name in SKIP_FILES:
                continue
            yield os.path.join(root, name)[2:]


def cart():
    from shop import Cart
    return Cart().add("apples", 120, 3).add("honey", 650).add("Big wheel of cheese", 123456, 2)


class Test1OldNameGone(unittest.TestCase):
    def test_a_old_name_gone_everywhere(self):
        """the old name must not appear anywhere in the project (code, tests, docs)"""
        pattern = re.compile(rf"\b{OLD}\b")
        hits = []
        for path in workspace_files():
            try:
                with open(path, encoding="utf-8") as fh:
                    for number, line in enumerate(fh, start=1):
                        if pattern.search(line):
                            hits.append(f"{path}:{number}")
            except (UnicodeDecodeError, OSError):
                continue
        if hits:
            self.fail(f"'{OLD}' still appears at {', '.join(hits[:4])}" + (" ..." if len(hits) > 4 else ""))

    def test_no_alias_attribute(self):
        """no compatibility alias may be left on shop or shop.money"""
        import shop
        import shop.money
        self.assertFalse(hasattr(shop.money, OLD), f"shop.money still has an attribute '{OLD}'")
        self.assertFalse(hasattr(shop, OLD), f"shop still has an attribute '{OLD}'")


class Test2NewName(unittest.TestCase):
    def test_defined_in_money(self):
        """format_currency must be defined (as a function) in shop/money.py"""
        money = importlib.import_module("shop.money")
        func = getattr(money, NEW, None)
        self.assertTrue(inspect.isfunction(func), f"shop.money.{NEW} is not a function")
        self.assertEqual(func.__name__, NEW)
        self.assertEqual(func.__module__, "shop.money")

    def test_exported(self):
        """format_currency must be exported from the shop package"""
        import shop
        self.assertIn(NEW, shop.__all__)
        self.assertIs(getattr(shop, NEW), shop.money.format_currency)
        self.assertEqual(sorted(shop.__all__),
                         sorted(["Cart", "LineItem", "render_invoice", NEW, "parse_money"]))

    def test_signature(self):
        """format_currency keeps the signature (cents, symbol='€')"""
        from shop.money import format_currency
        self.assertEqual(str(inspect.signature(format_currency)), "(cents, symbol='€')")
        self.assertEqual(format_currency(100, symbol="$"), "$1.00")
        self.assertEqual(format_currency(100, "£"), "£1.00")


class Test3BehaviourUnchanged(unittest.TestCase):
    def test_format(self):
        """format_currency output is unchanged"""
        from shop.money import format_currency
        for cents, expected in [(0, "€0.00"), (5, "€0.05"), (-5, "-€0.05"), (123456, "€1,234.56"),
                                (100000000, "€1,000,000.00")]:
            self.assertEqual(format_currency(cents), expected)

    def test_cart(self):
        """Cart/LineItem text is unchanged"""
        c = cart()
        self.assertEqual(c.items[0].describe(), "3 x apples @ €1.20")
        self.assertEqual(c.summary(), "3 item(s), total €2,479.22")

    def test_invoice(self):
        """render_invoice output is unchanged"""
        from shop import render_invoice
        self.assertEqual(render_invoice(cart(), "Ada Lovelace"), INVOICE_ADA)
        dollars = render_invoice(cart(), "Ada", currency="$")
        self.assertTrue(dollars.endswith("Total                                      $2,479.22\n"
                                         "  of which VAT 21%                           $430.28"), dollars)

    def test_report(self):
        """daily_report output is unchanged"""
        from shop import Cart
        from shop.report import daily_report
        self.assertEqual(daily_report([cart(), Cart().add("apples", 99, 1)]), REPORT)
        self.assertEqual(daily_report([]), "Carts: 0\nRevenue: €0.00")

    def test_cli(self):
        """cli.py output is unchanged"""
        proc = subprocess.run([sys.executable, "cli.py", "apples=1.20x3", "wine=€1,250.5"],
                              capture_output=True, text=True, encoding="utf-8", timeout=20)
        self.assertEqual(proc.returncode, 0, proc.stderr[-300:])
        self.assertEqual(proc.stdout, CLI_OUT)


class Test4ProjectTests(unittest.TestCase):
    def test_project_tests_updated_and_passing(self):
        """the project's own tests (tests/test_shop.py) must use the new name and pass"""
        with open(os.path.join("tests", "test_shop.py"), encoding="utf-8") as fh:
            self.assertIn(NEW, fh.read(), "tests/test_shop.py no longer exercises format_currency")
        proc = subprocess.run([sys.executable, "-m", "unittest", "tests.test_shop"],
                              capture_output=True, text=True, timeout=30)
        if proc.returncode != 0:
            last = [l for l in proc.stderr.strip().splitlines() if l.strip()][-3:]
            self.fail("python3 -m unittest tests.test_shop fails: " + " / ".join(last))


if __name__ == "__main__":
    unittest.main()
