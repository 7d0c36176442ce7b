UNITS = {"s": 1, "m": 60, "h": 3600}


def parse_duration(text: str) -> int:
    """'90s' -> 90, '2m' -> 120, '1h' -> 3600."""
    return int(text[:-1]) * UNITS[text[-1]]
