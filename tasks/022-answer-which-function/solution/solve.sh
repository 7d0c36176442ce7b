cat <<'ANSWER'
The "quota exceeded" error is raised by **`reserve_space(account, nbytes)`** in `storage/quota.py`
(as `QuotaExceeded`, HTTP 413). `upload()` in `storage/uploads.py` calls it before storing the data.

It raises when:

- the account's plan is **not** `"unlimited"` (unlimited accounts return early and are never checked), and
- `projected = account.used_bytes + nbytes` — current usage plus the size of the new upload — is
  **strictly greater** than `account.quota_bytes + GRACE_BYTES`, where `GRACE_BYTES = 10 * 1024 * 1024` (10 MiB).

So uploads may overshoot the quota by up to 10 MiB; landing exactly on quota + grace is still allowed.
When an existing object is replaced, its old size is released first, so only the net growth counts.
ANSWER
