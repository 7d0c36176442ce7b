"""invoicer - render plain-text invoices from JSON."""

__version__ = "0.4.1"
