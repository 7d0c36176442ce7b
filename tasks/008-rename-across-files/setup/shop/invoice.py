from .money import fmt_money

VAT_RATE_PERCENT = 21


def render_invoice(cart, customer, currency="€"):
    """Plain-text invoice for a cart; VAT is included in the prices."""
    lines = [f"Invoice for {customer}", ""]
    for item in cart.items:
        amount = fmt_money(item.total_cents, symbol=currency)
        lines.append(f"{item.describe():<40}{amount:>12}")
    total = cart.total_cents()
    vat = round(total * VAT_RATE_PERCENT / (100 + VAT_RATE_PERCENT))
    lines.append("-" * 52)
    lines.append(f"{'Total':<40}{fmt_money(total, symbol=currency):>12}")
    lines.append(f"{'  of which VAT ' + str(VAT_RATE_PERCENT) + '%':<40}{fmt_money(vat, currency):>12}")
    return "\n".join(lines)
