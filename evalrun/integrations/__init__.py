"""Integrations with services outside evalrun (`opik`, `otel`); the core never imports them."""
