set -e
bad=$(git log --format=%H --grep='^Speed up cent rounding$' main)
git revert --no-edit "$bad" >/dev/null 2>&1 || true
git checkout -q --theirs shop/pricing.py
git add shop/pricing.py
GIT_EDITOR=true git revert --continue >/dev/null
