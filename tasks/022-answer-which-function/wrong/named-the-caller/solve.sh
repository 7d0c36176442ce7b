cat <<'ANSWER'
The error comes from **`upload()`** in `storage/uploads.py`. Unless the account's plan is `unlimited`,
the upload is rejected with `QuotaExceeded` when current usage plus the new file's size is greater than
the quota plus a grace allowance of 10 MiB (`GRACE_BYTES`).
ANSWER
