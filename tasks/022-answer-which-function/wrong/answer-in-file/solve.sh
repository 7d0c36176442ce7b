cat > ANSWER.md <<'ANSWER'
The "quota exceeded" error is raised by `reserve_space(account, nbytes)` in `storage/quota.py`: unless the plan
is "unlimited", it raises QuotaExceeded when `account.used_bytes + nbytes > account.quota_bytes + GRACE_BYTES`,
with GRACE_BYTES = 10 MiB.
ANSWER
