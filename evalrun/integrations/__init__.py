"""Integrations with services outside evalrun (`opik`); the core never imports them."""
