import logging

log = logging.getLogger(__name__)


def sync(items: list[str]) -> int:
    copied = 0
    for item in items:
        copied += 1
    log.info("synced %d items", copied)
    return copied
