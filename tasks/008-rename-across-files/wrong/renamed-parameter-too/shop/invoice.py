from .money import format_currency

VAT_RATE_PERCENT = 21


def render_invoice(cart, customer, currency="€"):
    """Plain-text invoice for a cart; VAT is included in the prices."""
    lines = [f"Invoice for {customer}", ""]
    for item in cart.items:
        amount = format_currency(item.total_cents, currency_symbol=currency)
        lines.append(f"{item.describe():<40}{amount:>12}")
    total = cart.total_cents()
    vat = round(total * VAT_RATE_PERCENT / (100 + VAT_RATE_PERCENT))
    lines.append("-" * 52)
    lines.append(f"{'Total':<40}{format_currency(total, currency_symbol=currency):>12}")
    lines.append(f"{'  of which VAT ' + str(VAT_RATE_PERCENT) + '%':<40}{format_currency(vat, currency):>12}")
    return "\n".join(lines)
