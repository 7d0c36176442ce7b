set -e
git add src/ratelimit.py src/sliding_window.py tests/test_ratelimit.py
git commit -q -m "Add sliding-window rate limiter"
git branch feature/sliding-window
git switch -q feature/sliding-window
