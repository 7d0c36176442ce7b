"""What a model's tokens cost, from a price in config or from litellm's model cost map.

Precedence (the agent applies it): a cost the provider reports with the response wins; else a
price from config (`provider.price`); else litellm's model cost map; else the cost is unknown and
stays `None` with `cost_source` saying why - never a made-up 0.

litellm's map is read straight from the JSON file litellm ships
(`model_prices_and_context_window_backup.json`), located without importing litellm: the import
takes 4-8 s and, without `LITELLM_LOCAL_MODEL_COST_MAP=True`, fetches the map from the internet.
Reading the bundled file takes about 40 ms, once per process.

Token convention (the same as pydantic-ai's): `input_tokens` counts every prompt token, cached ones
included; `cache_read_tokens` and `cache_write_tokens` are the parts of it that were read from or
written to a prompt cache.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LITELLM_MAP_FILE = "model_prices_and_context_window_backup.json"
PER_MILLION = 1_000_000


@dataclass(frozen=True)
class Price:
    """USD per million tokens. A missing cache price falls back to the plain input price."""

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None
    source: str = "config price"

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float:
        """USD for one batch of tokens (see the module docstring for the token convention)."""
        fresh = max(input_tokens - cache_read_tokens - cache_write_tokens, 0)
        read = self.input_per_mtok if self.cache_read_per_mtok is None else self.cache_read_per_mtok
        write = (
            self.input_per_mtok if self.cache_write_per_mtok is None else self.cache_write_per_mtok
        )
        total = (
            fresh * self.input_per_mtok
            + cache_read_tokens * read
            + cache_write_tokens * write
            + output_tokens * self.output_per_mtok
        )
        return total / PER_MILLION


def litellm_map_path() -> Path | None:
    """Where litellm's bundled cost map is, or None when litellm is not installed."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / LITELLM_MAP_FILE
    return path if path.is_file() else None


@functools.cache
def _litellm_table() -> dict[str, Any]:
    path = litellm_map_path()
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _per_mtok(entry: dict[str, Any], key: str) -> float | None:
    value = entry.get(key)
    return float(value) * PER_MILLION if isinstance(value, int | float) else None


def litellm_price(model: str, prefixes: Sequence[str] = ()) -> Price | None:
    """The price litellm's map gives `model`, trying `<prefix>/<model>` for each prefix first.

    For a vendor-qualified name like `openai/gpt-4o-mini` the bare `gpt-4o-mini` is tried last.
    """
    table = _litellm_table()
    candidates = [f"{p}/{model}" for p in prefixes if p] + [model]
    if "/" in model:
        candidates.append(model.split("/", 1)[1])
    for key in candidates:
        entry = table.get(key)
        if not isinstance(entry, dict) or key == "sample_spec":
            continue
        input_price = _per_mtok(entry, "input_cost_per_token")
        output_price = _per_mtok(entry, "output_cost_per_token")
        if input_price is None or output_price is None:
            continue
        return Price(
            input_per_mtok=input_price,
            output_per_mtok=output_price,
            cache_read_per_mtok=_per_mtok(entry, "cache_read_input_token_cost"),
            cache_write_per_mtok=_per_mtok(entry, "cache_creation_input_token_cost"),
            source=f"litellm price for {key!r}",
        )
    return None


def resolve_price(
    model: str, *, override: Price | None = None, prefixes: Sequence[str] = ()
) -> tuple[Price | None, str]:
    """The price to use for `model` and a note on where it came from (or why there is none)."""
    if override is not None:
        return override, override.source
    found = litellm_price(model, prefixes)
    if found is not None:
        return found, found.source
    if litellm_map_path() is None:
        return None, (
            f"unknown: no price for {model!r} - litellm (the price table) is not installed; "
            "install evalrun[agents] or set provider.price"
        )
    return None, f"unknown: {model!r} is not in litellm's cost map; set provider.price"
