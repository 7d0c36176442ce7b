from dataclasses import dataclass, field

from .money import format_currency


@dataclass
class LineItem:
    name: str
    unit_cents: int
    qty: int = 1

    @property
    def total_cents(self):
        return self.unit_cents * self.qty

    def describe(self):
        return f"{self.qty} x {self.name} @ {format_currency(self.unit_cents)}"


@dataclass
class Cart:
    items: list = field(default_factory=list)

    def add(self, name, unit_cents, qty=1):
        self.items.append(LineItem(name, unit_cents, qty))
        return self

    def total_cents(self):
        return sum(item.total_cents for item in self.items)

    def summary(self):
        return f"{len(self.items)} item(s), total {format_currency(self.total_cents())}"
