"""Invoice arithmetic.   Amounts are in cents."""

TAX_RATE = 0.2
DISCOUNT_RATE   = 0.1   # loyal customers


def total(net_cents:int, loyal:bool=False)->int:
    if loyal: net_cents = round(net_cents*(1-DISCOUNT_RATE))
    return round(net_cents * (1 + TAX_RATE))
