"""Retrying, one way: tenacity, with evalrun's backoff.

Four things retry: a sample that ended in a harness error (`evalrun.run.engine`), an LLM judgement
that failed (`evalrun.integrations.opik.geval`) or an online conversation judgement that failed
(`evalrun.integrations.opik.conversation`), and reading back what reached Opik
(`evalrun.integrations.opik.export`).
Each asks `retrying(...)` for a tenacity retryer instead of writing its own loop:

- try at most `tries` times; before try n+1 wait `backoff_s * 2**(n-1)` seconds, at most
  `max_wait_s` (`waits` instead gives the waits one by one, for polling);
- retry on a result (`on_result(result)` true) and/or on an exception (`on_error`);
- `give_up()` true stops retrying early (e.g. the run's budget is spent);
- when the tries run out, the last result is returned (or the last exception raised).

tenacity is imported when a retryer is made, not when evalrun starts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tenacity import AsyncRetrying, RetryCallState, Retrying


def _policy(
    tries: int,
    backoff_s: float,
    on_result: Callable[[Any], bool] | None,
    on_error: bool,
    give_up: Callable[[], bool] | None,
    waits: Sequence[float] | None,
    max_wait_s: float | None = None,
) -> dict[str, Any]:
    import tenacity

    retry: Any = tenacity.retry_never
    if on_result is not None:
        retry = tenacity.retry_if_result(on_result)
    if on_error:
        retry = retry | tenacity.retry_if_exception_type(Exception)
    out_of_tries = tenacity.stop_after_attempt(max(1, tries))

    def stop(state: RetryCallState) -> bool:
        return out_of_tries(state) or (give_up is not None and give_up())

    cap = {} if max_wait_s is None else {"max": max_wait_s}
    wait: Any = tenacity.wait_exponential(multiplier=backoff_s, exp_base=2, min=0, **cap)
    if waits is not None:
        planned = list(waits)

        def wait(state: RetryCallState) -> float:
            return planned[min(state.attempt_number, len(planned)) - 1] if planned else 0.0

    def last(state: RetryCallState) -> Any:
        assert state.outcome is not None
        return state.outcome.result()  # the last result, or the last exception raised again

    return {"retry": retry, "stop": stop, "wait": wait, "retry_error_callback": last}


def retrying(
    tries: int,
    backoff_s: float = 0.0,
    *,
    on_result: Callable[[Any], bool] | None = None,
    on_error: bool = False,
    give_up: Callable[[], bool] | None = None,
    waits: Sequence[float] | None = None,
    max_wait_s: float | None = None,
) -> Retrying:
    """A synchronous retryer: `retrying(...)(fn, *args)` (see the module docstring)."""
    import tenacity

    return tenacity.Retrying(
        **_policy(tries, backoff_s, on_result, on_error, give_up, waits, max_wait_s)
    )


def async_retrying(
    tries: int,
    backoff_s: float = 0.0,
    *,
    on_result: Callable[[Any], bool] | None = None,
    on_error: bool = False,
    give_up: Callable[[], bool] | None = None,
) -> AsyncRetrying:
    """An asyncio retryer: `await async_retrying(...)(coroutine_fn, *args)`; the number of tries
    made is `retryer.statistics["attempt_number"]` afterwards."""
    import tenacity

    return tenacity.AsyncRetrying(**_policy(tries, backoff_s, on_result, on_error, give_up, None))
