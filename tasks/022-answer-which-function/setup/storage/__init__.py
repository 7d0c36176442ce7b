"""Object storage service: accounts, uploads, quotas and billing."""
