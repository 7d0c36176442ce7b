"""Secrets never reach a log: any config key named like a credential has its value masked."""

from __future__ import annotations

import re
from typing import Any

MASK = "***"
_SECRET_WORDS = {"key", "apikey", "token", "secret", "password", "passwd", "authorization"}
_SPLIT = re.compile(r"[_\-.\s]+")


def is_secret_key(name: str) -> bool:
    """`api_key`, `Modal-Secret`, `Authorization` are secrets; `api_key_env`, `max_tokens` not."""
    words = [w for w in _SPLIT.split(name.lower()) if w]
    if not words or words[-1] == "env":
        return False
    return any(w in _SECRET_WORDS for w in words)


def redact(value: Any) -> Any:
    """A deep copy of `value` with every secret-named key's value masked (None stays None)."""
    if isinstance(value, dict):
        return {
            k: (MASK if is_secret_key(str(k)) and v not in (None, "") else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value
