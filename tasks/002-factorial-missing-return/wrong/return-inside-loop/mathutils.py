"""Integer helpers for the combinatorics worksheet generator."""

# 0! .. 7!, served straight from the table.
_SMALL_FACTORIALS = (1, 1, 2, 6, 24, 120, 720, 5040)


def factorial(n):
    """Return n! for a non-negative integer n.

    Small values come from a lookup table; larger ones are computed
    iteratively, so big inputs such as factorial(5000) work fine.
    Raises TypeError for non-integers (including bools) and ValueError
    for negative numbers.
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"factorial() only accepts integers, got {type(n).__name__}")
    if n < 0:
        raise ValueError("factorial() not defined for negative values")
    if n < len(_SMALL_FACTORIALS):
        return _SMALL_FACTORIALS[n]
    result = _SMALL_FACTORIALS[-1]
    for k in range(len(_SMALL_FACTORIALS), n + 1):
        result *= k
        return result


def binomial(n, k):
    """Number of ways to choose k items from n (0 if k is out of range)."""
    if k < 0 or k > n:
        return 0
    return factorial(n) // (factorial(k) * factorial(n - k))


def permutations_count(n, k):
    """Number of ordered arrangements of k items taken from n."""
    if k < 0 or k > n:
        return 0
    return factorial(n) // factorial(n - k)
