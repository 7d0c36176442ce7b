def clamp(x: float, lo: float, hi: float) -> float:
    return max(lo, min(x, hi))
