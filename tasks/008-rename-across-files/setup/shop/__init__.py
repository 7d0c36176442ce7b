"""Order handling for the market stall: carts, invoices and daily reports."""
from .cart import Cart, LineItem
from .invoice import render_invoice
from .money import fmt_money, parse_money

__all__ = ["Cart", "LineItem", "render_invoice", "fmt_money", "parse_money"]
