"""End-of-day report across all carts sold."""
from collections import Counter

from . import money


def daily_report(carts):
    revenue = sum(cart.total_cents() for cart in carts)
    units = Counter()
    for cart in carts:
        for item in cart.items:
            units[item.name] += item.qty
    lines = [f"Carts: {len(carts)}", f"Revenue: {money.format_currency(revenue)}"]
    if carts:
        lines.append(f"Average cart: {money.format_currency(revenue // len(carts))}")
    for name, qty in sorted(units.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"  {name}: {qty}")
    return "\n".join(lines)
