# Build the shop repo: 7 commits on main, the 3rd one silently broke rounding.
set -e
git init -q -b main
git config core.autocrlf false
echo setup.sh >> .git/info/exclude
commit() {  # commit <date> <message>
  git add -A
  GIT_AUTHOR_DATE="$1" GIT_COMMITTER_DATE="$1" git commit -q -m "$2"
}
mkdir -p shop tests

cat > shop/__init__.py <<'EOF'
__version__ = "1.0.0"
EOF
cat > shop/pricing.py <<'EOF'
"""Price arithmetic for the shop. All amounts are Decimal."""
from decimal import Decimal, ROUND_HALF_UP

CENT = Decimal("0.01")


def to_cents(amount):
    """Round to whole cents."""
    return Decimal(amount).quantize(CENT, rounding=ROUND_HALF_UP)


def line_total(unit_price, qty):
    return to_cents(Decimal(unit_price) * qty)


def order_total(lines, tax_rate="0"):
    subtotal = sum((line_total(price, qty) for price, qty in lines), Decimal("0"))
    return subtotal + to_cents(subtotal * Decimal(tax_rate))
EOF
commit "2024-03-01T09:00:00+00:00" "Add pricing module"

cat > README.md <<'EOF'
# shop

Pricing helpers for the web shop.

    python3 -m unittest discover -s tests
EOF
cat > tests/test_pricing.py <<'EOF'
import unittest
from decimal import Decimal

from shop.pricing import line_total, order_total


class PricingTest(unittest.TestCase):
    def test_line_total(self):
        self.assertEqual(line_total("1.50", 2), Decimal("3.00"))

    def test_order_total_with_tax(self):
        self.assertEqual(order_total([("10.00", 1), ("2.50", 2)], "0.2"), Decimal("18.00"))
EOF
touch tests/__init__.py
printf '__pycache__/\n*.pyc\n' > .gitignore
commit "2024-03-02T10:30:00+00:00" "Add README and tests"

cat > shop/pricing.py <<'EOF'
"""Price arithmetic for the shop. All amounts are Decimal."""
from decimal import Decimal, ROUND_HALF_UP

CENT = Decimal("0.01")


def to_cents(amount):
    """Round to whole cents."""
    return (Decimal(int(Decimal(amount) * 100)) / 100).quantize(CENT)  # int() is ~3x faster than quantize()


def line_total(unit_price, qty):
    return to_cents(Decimal(unit_price) * qty)


def order_total(lines, tax_rate="0"):
    subtotal = sum((line_total(price, qty) for price, qty in lines), Decimal("0"))
    return subtotal + to_cents(subtotal * Decimal(tax_rate))
EOF
commit "2024-03-04T16:45:00+00:00" "Speed up cent rounding"

cat >> shop/pricing.py <<'EOF'


def apply_discount(total, percent):
    """Take `percent` % off `total`, rounded to cents."""
    return to_cents(Decimal(total) * (100 - Decimal(percent)) / 100)
EOF
commit "2024-03-05T11:20:00+00:00" "Add percentage discounts"

sed -i 's|    """Round to whole cents."""|    """Round to whole cents, half away from zero (1.005 -> 1.01, -1.005 -> -1.01)."""|' shop/pricing.py
commit "2024-03-06T09:10:00+00:00" "Document rounding mode of to_cents"

cat > shop/cli.py <<'EOF'
"""usage: python3 -m shop.cli PRICE:QTY [PRICE:QTY ...] [--tax RATE] [--discount PERCENT]"""
import argparse

from .pricing import apply_discount, order_total


def main(argv=None):
    parser = argparse.ArgumentParser(prog="shop.cli")
    parser.add_argument("items", nargs="+", help="PRICE:QTY")
    parser.add_argument("--tax", default="0")
    parser.add_argument("--discount", default="0")
    args = parser.parse_args(argv)
    lines = [(p, int(q)) for p, q in (item.split(":") for item in args.items)]
    print(apply_discount(order_total(lines, args.tax), args.discount))


if __name__ == "__main__":
    main()
EOF
cat >> README.md <<'EOF'

Quick total from the command line:

    python3 -m shop.cli 0.335:3 4.99:1 --tax 0.2 --discount 10
EOF
commit "2024-03-07T14:00:00+00:00" "Add command-line entry point"

cat > shop/__init__.py <<'EOF'
__version__ = "1.3.0"
EOF
cat > CHANGELOG.md <<'EOF'
# Changelog

## 1.3.0
- percentage discounts (`apply_discount`)
- `python3 -m shop.cli`
EOF
commit "2024-03-08T17:30:00+00:00" "Release 1.3.0"
