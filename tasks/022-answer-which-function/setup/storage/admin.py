import logging

log = logging.getLogger(__name__)


def audit_over_quota(accounts):
    """Nightly job: list accounts that are over quota (they can still read/delete)."""
    over = []
    for acc in accounts:
        if acc.quota_bytes and acc.used_bytes > acc.quota_bytes:
            log.info("account %s over quota (quota exceeded by %d bytes)", acc.id, acc.used_bytes - acc.quota_bytes)
            over.append(acc.id)
    return over
