"""Quick price check: python3 cli.py NAME=PRICE[xQTY] ...  (e.g. apples=1.20x3)"""
import sys

from shop import Cart, format_currency, parse_money
from shop.report import daily_report


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    cart = Cart()
    for arg in argv:
        name, _, rest = arg.partition("=")
        price, _, qty = rest.partition("x")
        cart.add(name, parse_money(price), int(qty or 1))
    for item in cart.items:
        print(f"{item.describe()} = {format_currency(item.total_cents)}")
    print(cart.summary())
    print(daily_report([cart]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
