def order_total(lines: list[tuple[int, int]]) -> int:
    """Sum of quantity x unit price (cents)."""
    total = 0
    for qty, price in lines:
        total += qty * price
    return total
    # TODO: apply volume discounts
