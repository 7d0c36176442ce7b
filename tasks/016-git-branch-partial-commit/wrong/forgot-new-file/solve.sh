set -e
git switch -q -c feature/sliding-window
git commit -q -m "Add sliding-window rate limiter" src/ratelimit.py tests/test_ratelimit.py
