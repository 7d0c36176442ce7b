"""Money helpers. Amounts are integer cents everywhere inside the package."""


def parse_money(text):
    """Parse '12.5', '€1,234.56' or '-3' into integer cents."""
    cleaned = text.strip().lstrip("€$£").replace(",", "")
    negative = cleaned.startswith("-")
    whole, _, frac = cleaned.lstrip("-").partition(".")
    if not whole.isdigit() or (frac and not frac.isdigit()) or len(frac) > 2:
        raise ValueError(f"not a money amount: {text!r}")
    cents = int(whole) * 100 + int(frac.ljust(2, "0") or 0)
    return -cents if negative else cents


def format_currency(cents, symbol="€"):
    """Format integer cents for display: format_currency(123456) -> '€1,234.56'."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{symbol}{whole:,}.{frac:02d}"


# Backwards-compatible alias for the old name.
fmt_money = format_currency
