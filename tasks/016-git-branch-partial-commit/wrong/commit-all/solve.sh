set -e
git switch -q -c feature/sliding-window
git add -A
git commit -q -m "Add sliding-window rate limiter"
