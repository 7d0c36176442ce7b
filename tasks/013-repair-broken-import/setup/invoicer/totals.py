from dataclasses import dataclass
from decimal import Decimal

from money import Money, ZERO


@dataclass
class Totals:
    line_totals: list
    subtotal: Money
    tax: Money
    total: Money


def compute_totals(lines, tax_rate="0"):
    """Line totals, subtotal, tax and grand total for a list of invoice lines."""
    line_totals = [Money(line["unit_price"]) * line.get("qty", 1) for line in lines]
    subtotal = ZERO
    for amount in line_totals:
        subtotal = subtotal + amount
    tax = subtotal * Decimal(str(tax_rate))
    return Totals(line_totals, subtotal, tax, subtotal + tax)
