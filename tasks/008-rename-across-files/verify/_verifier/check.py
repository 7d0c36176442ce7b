"""Hidden checks for the shop rename, decided here; the workspace's code runs only in a child."""

import os
import re
import sys
import unittest

sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402

OLD = "fmt" + "_money"          # spelled this way so this file never matches itself
NEW = "format_currency"
SKIP_DIRS = {".git", "__pycache__", "_verifier", "_evalrun"}
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
CART = ("def cart():\n"
        "    from shop import Cart\n"
        "    return Cart().add('apples', 120, 3).add('honey', 650).add('Big wheel of cheese', 123456, 2)\n")
W = None


def setUpModule():
    global W
    W = kit.Session(f"import importlib, inspect\nOLD, NEW = {OLD!r}, {NEW!r}\n{CART}")


def tearDownModule():
    W.close()


def workspace_files():
    for root, dirs, files in os.walk("."):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            if root == "." and name in SKIP_FILES:
                continue
            yield os.path.join(root, name)[2:]


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
        W.exec("import shop\nimport shop.money")
        self.assertFalse(W.value("hasattr(shop.money, OLD)"), f"shop.money still has an attribute '{OLD}'")
        self.assertFalse(W.value("hasattr(shop, OLD)"), f"shop still has an attribute '{OLD}'")


class Test2NewName(unittest.TestCase):
    def test_defined_in_money(self):
        """format_currency must be defined (as a function) in shop/money.py"""
        W.exec("money = importlib.import_module('shop.money')\nfunc = getattr(money, NEW, None)")
        self.assertTrue(W.value("inspect.isfunction(func)"), f"shop.money.{NEW} is not a function")
        self.assertEqual(W.value("func.__name__"), NEW)
        self.assertEqual(W.value("func.__module__"), "shop.money")

    def test_exported(self):
        """format_currency must be exported from the shop package"""
        W.exec("import shop\nimport shop.money")
        self.assertIn(NEW, W.value("list(shop.__all__)"))
        self.assertTrue(W.value("getattr(shop, NEW) is shop.money.format_currency"))
        self.assertEqual(W.value("sorted(shop.__all__)"),
                         sorted(["Cart", "LineItem", "render_invoice", NEW, "parse_money"]))

    def test_signature(self):
        """format_currency keeps the signature (cents, symbol='€')"""
        W.exec("from shop.money import format_currency")
        self.assertEqual(W.value("str(inspect.signature(format_currency))"), "(cents, symbol='€')")
        self.assertEqual(W.value("format_currency(100, symbol='$')"), "$1.00")
        self.assertEqual(W.value("format_currency(100, '£')"), "£1.00")


class Test3BehaviourUnchanged(unittest.TestCase):
    def test_format(self):
        """format_currency output is unchanged"""
        W.exec("from shop.money import format_currency")
        for cents, expected in [(0, "€0.00"), (5, "€0.05"), (-5, "-€0.05"), (123456, "€1,234.56"),
                                (100000000, "€1,000,000.00")]:
            self.assertEqual(W.call("format_currency", cents), expected)

    def test_cart(self):
        """Cart/LineItem text is unchanged"""
        W.exec("c = cart()")
        self.assertEqual(W.value("c.items[0].describe()"), "3 x apples @ €1.20")
        self.assertEqual(W.value("c.summary()"), "3 item(s), total €2,479.22")

    def test_invoice(self):
        """render_invoice output is unchanged"""
        W.exec("from shop import render_invoice")
        self.assertEqual(W.value("render_invoice(cart(), 'Ada Lovelace')"), INVOICE_ADA)
        dollars = W.value("render_invoice(cart(), 'Ada', currency='$')")
        self.assertTrue(dollars.endswith("Total                                      $2,479.22\n"
                                         "  of which VAT 21%                           $430.28"), dollars)

    def test_report(self):
        """daily_report output is unchanged"""
        W.exec("from shop import Cart\nfrom shop.report import daily_report")
        self.assertEqual(W.value("daily_report([cart(), Cart().add('apples', 99, 1)])"), REPORT)
        self.assertEqual(W.value("daily_report([])"), "Carts: 0\nRevenue: €0.00")

    def test_cli(self):
        """cli.py output is unchanged"""
        proc = kit.run([sys.executable, "cli.py", "apples=1.20x3", "wine=€1,250.5"], timeout_s=20)
        self.assertEqual(proc.returncode, 0, proc.stderr[-300:])
        self.assertEqual(proc.stdout, CLI_OUT)


class Test4ProjectTests(unittest.TestCase):
    def test_project_tests_updated_and_passing(self):
        """the project's own tests (tests/test_shop.py) must use the new name and pass"""
        with open(os.path.join("tests", "test_shop.py"), encoding="utf-8") as fh:
            self.assertIn(NEW, fh.read(), "tests/test_shop.py no longer exercises format_currency")
        proc = kit.run([sys.executable, "-m", "unittest", "tests.test_shop"])
        if proc.returncode != 0:
            last = [line for line in proc.stderr.strip().splitlines() if line.strip()][-3:]
            self.fail("python3 -m unittest tests.test_shop fails: " + " / ".join(last))


if __name__ == "__main__":
    kit.main()
