"""Order handling for the market stall: carts, invoices and daily reports."""
from .cart import Cart, LineItem
from .invoice import render_invoice
from .money import format_currency, parse_money

__all__ = ["Cart", "LineItem", "render_invoice", "format_currency", "parse_money"]
