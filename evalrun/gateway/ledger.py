"""Per-sample accounts and budgets: what each sample's model requests used and cost.

The gateway asks `Ledger.refusal(account)` before forwarding a generation request and calls
`Ledger.charge(account, metered)` after reading its response. Limits (`Budget`) are checked
before each request, so a request is refused once a limit is *reached*; the request that crosses
a limit completes (its tokens cannot be known in advance). Costs are priced by evalrun itself
(`evalrun.config.pricing`: the config price, else litellm's cost map), never taken from the agent.
Thread-safe: the gateway's thread writes, the engine's thread reads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from evalrun.config.pricing import Price
from evalrun.gateway.meter import Metered
from evalrun.models.records import ModelCall, Usage

Pricer = Callable[[str], tuple[Price | None, str]]
TOKEN_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@dataclass(frozen=True)
class Budget:
    """Per-sample limits (`requests`, `tokens`, `usd`) and the run's USD cap; None: no limit."""

    requests: int | None = None
    tokens: int | None = None
    usd: float | None = None
    run_usd: float | None = None


@dataclass
class Account:
    """One sample's model traffic through the gateway."""

    label: str
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: list[str] = field(default_factory=list)  # why some request had no price
    models: list[str] = field(default_factory=list)
    refused: str | None = None  # the first budget refusal
    run_cap_hit: bool = False  # refused because the whole run reached budget.run_usd
    upstream_failures: list[tuple[int, str]] = field(default_factory=list)  # (status, message)
    gateway_failures: list[str] = field(default_factory=list)  # provider unreachable, ...
    upstream_successes: int = 0
    last_failed: bool = False  # the last exchange with the provider was an error
    calls: list[ModelCall] = field(default_factory=list)  # each metered request, in order

    def usage(self) -> Usage:
        if self.requests and self.unpriced:
            cost, source = None, f"unknown: {self.unpriced[0]}"
        else:
            cost, source = self.cost_usd, "metered by evalrun's gateway"
            if self.requests == 0:
                source = "metered by evalrun's gateway: no model requests"
        return Usage(
            requests=self.requests,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens,
            cost_usd=cost,
            cost_source=source,
        )


class Ledger:
    """Every account of a run, the run's total, and the budget they are held to."""

    def __init__(self, budget: Budget, pricer: Pricer):
        self.budget = budget
        self._pricer = pricer
        self._lock = threading.Lock()
        self.run_usd = 0.0
        self.run_stopped: str | None = None

    def refusal(self, account: Account) -> str | None:
        """Why the next request of `account` may not go out, or None."""
        budget = self.budget
        with self._lock:
            if self.run_stopped:
                account.run_cap_hit = True
                reason = self.run_stopped
            elif budget.requests is not None and account.requests >= budget.requests:
                reason = f"budget.requests: the sample used its {budget.requests} model requests"
            elif (
                budget.tokens is not None
                and account.input_tokens + account.output_tokens >= budget.tokens
            ):
                reason = f"budget.tokens: the sample used its {budget.tokens} tokens"
            elif budget.usd is not None and account.cost_usd >= budget.usd:
                reason = f"budget.usd: the sample spent its ${budget.usd:g}"
            else:
                return None
            account.refused = account.refused or reason
            return reason

    def charge(self, account: Account, metered: Metered, started_at: float | None = None) -> None:
        """Add `metered` (a request forwarded at `started_at`, its response read just now) to
        `account`, priced by evalrun."""
        finished = time.time()
        if metered.model:
            price, source = self._pricer(metered.model)
        else:
            price, source = None, "the response named no model"
        tokens = {name: getattr(metered, name) for name in TOKEN_COUNTS}
        cost = price.cost(**tokens) if price is not None else 0.0
        with self._lock:
            account.requests += 1
            for name, used in tokens.items():
                setattr(account, name, getattr(account, name) + used)
            account.cost_usd += cost
            account.calls.append(
                ModelCall(
                    model=metered.model,
                    **tokens,
                    cost_usd=cost if price is not None else None,
                    tool_call_ids=list(metered.tool_call_ids),
                    started_at=started_at,
                    duration_s=None if started_at is None else finished - started_at,
                )
            )
            if price is None:
                account.unpriced.append(source.removeprefix("unknown: "))
            if metered.model and metered.model not in account.models:
                account.models.append(metered.model)
            self.run_usd += cost
            cap = self.budget.run_usd
            if cap is not None and self.run_usd >= cap and not self.run_stopped:
                self.run_stopped = (
                    f"budget.run_usd: the run spent ${self.run_usd:.4f} of its ${cap:g} cap"
                )
