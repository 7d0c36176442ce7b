cat <<'ANSWER'
It's `reserve_space()` in `storage/quota.py`. Unless the account is on the `unlimited` plan, it computes
`used_bytes + nbytes` (current usage plus the upload size) and raises `QuotaExceeded("quota exceeded: ...")`
when that is greater than `account.quota_bytes`.
ANSWER
