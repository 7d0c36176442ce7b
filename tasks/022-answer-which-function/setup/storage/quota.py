import logging

from .errors import QuotaExceeded

log = logging.getLogger(__name__)

# Uploads may overshoot the quota by this much so that a user who is just under
# the limit can still save the file they are working on.
GRACE_BYTES = 10 * 1024 * 1024

WARN_RATIO = 0.9


def usage_ratio(account):
    if not account.quota_bytes:
        return 0.0
    return account.used_bytes / account.quota_bytes


def quota_warning(account):
    """Log (never raise) when an account is close to its quota."""
    if usage_ratio(account) >= WARN_RATIO:
        log.warning("account %s: storage quota nearly exceeded (%.0f%%)", account.id, 100 * usage_ratio(account))
        return True
    return False


def reserve_space(account, nbytes):
    """Account for `nbytes` more bytes before an upload is written."""
    if account.plan == "unlimited":
        return
    projected = account.used_bytes + nbytes
    if projected > account.quota_bytes + GRACE_BYTES:
        raise QuotaExceeded(
            f"quota exceeded: {projected} bytes needed, {account.quota_bytes} allowed"
        )
    account.used_bytes = projected


def release_space(account, nbytes):
    account.used_bytes = max(0, account.used_bytes - nbytes)
