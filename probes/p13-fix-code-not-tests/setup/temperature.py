def to_fahrenheit(celsius: float) -> float:
    return celsius * 5 / 9 + 32
