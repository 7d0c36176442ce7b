from decimal import Decimal, ROUND_HALF_UP

CENT = Decimal("0.01")


class Money:
    """An amount of money with exact cent rounding."""

    __slots__ = ("amount",)

    def __init__(self, amount):
        self.amount = Decimal(str(amount)).quantize(CENT, rounding=ROUND_HALF_UP)

    def __add__(self, other):
        if not isinstance(other, Money):
            return NotImplemented
        return Money(self.amount + other.amount)

    def __mul__(self, factor):
        return Money(self.amount * Decimal(str(factor)))

    __rmul__ = __mul__

    def __eq__(self, other):
        return isinstance(other, Money) and self.amount == other.amount

    def __repr__(self):
        return f"Money('{self.amount}')"

    def format(self, symbol="$"):
        return f"{symbol}{self.amount:,.2f}"


ZERO = Money(0)
