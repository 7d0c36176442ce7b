import argparse
import json

from .totals import compute_totals
from .render import render_invoice


def main(argv=None):
    parser = argparse.ArgumentParser(prog="invoicer", description="Render an invoice JSON file as text.")
    parser.add_argument("invoice", help="path to an invoice .json file")
    parser.add_argument("--currency", default=None, help="override the invoice currency symbol")
    args = parser.parse_args(argv)

    with open(args.invoice, encoding="utf-8") as fh:
        invoice = json.load(fh)
    totals = compute_totals(invoice["lines"], invoice.get("tax_rate", "0"))
    print(render_invoice(invoice, totals, currency=args.currency))
    return 0
