from .errors import RateLimited

EGRESS_CAP = {"free": 20 * 1024**3, "team": 10 * 1024**4, "unlimited": None}


def enforce_monthly_cap(account, nbytes):
    """Downloads: refuse once the plan's monthly egress cap would be exceeded."""
    cap = EGRESS_CAP.get(account.plan)
    if cap is not None and account.monthly_egress_bytes + nbytes > cap:
        raise RateLimited("monthly transfer cap exceeded")
    account.monthly_egress_bytes += nbytes
