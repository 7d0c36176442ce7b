# TODO: support express shipping
def shipping_cost(weight_kg: float) -> int:
    return 500 if weight_kg < 1 else 900
