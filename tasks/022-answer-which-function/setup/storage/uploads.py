import hashlib

from .errors import NotFound, StorageError
from .quota import quota_warning, release_space, reserve_space

MAX_OBJECT_BYTES = 5 * 1024**3


def upload(account, name, data):
    """Store `data` under `name`; replaces an existing object of the same name."""
    if len(data) > MAX_OBJECT_BYTES:
        raise StorageError("object too large")
    old = account.objects.get(name)
    if old is not None:
        release_space(account, len(old))
    try:
        reserve_space(account, len(data))
    except StorageError:
        if old is not None:
            reserve_space(account, len(old))  # put the old object's usage back
        raise
    account.objects[name] = data
    quota_warning(account)
    return hashlib.sha256(data).hexdigest()


def delete(account, name):
    try:
        data = account.objects.pop(name)
    except KeyError:
        raise NotFound(name) from None
    release_space(account, len(data))
