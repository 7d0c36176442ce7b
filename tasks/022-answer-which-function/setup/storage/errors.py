class StorageError(Exception):
    """Base class for errors shown to API clients."""

    status = 400


class QuotaExceeded(StorageError):
    status = 413


class RateLimited(StorageError):
    status = 429


class NotFound(StorageError):
    status = 404
