"""Text rendering of invoices."""

from .text_table import format_table


def render_invoice(invoice, totals, currency=None):
    symbol = currency or invoice.get("currency", "$")
    rows = [
        (line["description"], str(line.get("qty", 1)), amount.format(symbol))
        for line, amount in zip(invoice["lines"], totals.line_totals)
    ]
    out = [f"INVOICE {invoice['number']}  -  {invoice['customer']}", ""]
    out.append(format_table(("Item", "Qty", "Amount"), rows))
    out.append("")
    out.append(f"Subtotal: {totals.subtotal.format(symbol)}")
    out.append(f"Tax:      {totals.tax.format(symbol)}")
    out.append(f"Total:    {totals.total.format(symbol)}")
    return "\n".join(out)
