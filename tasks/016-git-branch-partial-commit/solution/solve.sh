set -e
git switch -q -c feature/sliding-window
git add src/ratelimit.py src/sliding_window.py tests/test_ratelimit.py
GIT_AUTHOR_DATE="2024-02-09T10:00:00+00:00" GIT_COMMITTER_DATE="2024-02-09T10:00:00+00:00" \
  git commit -q -m "Add sliding-window rate limiter"
