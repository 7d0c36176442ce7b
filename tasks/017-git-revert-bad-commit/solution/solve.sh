set -e
export GIT_AUTHOR_DATE="2024-03-11T09:00:00+00:00" GIT_COMMITTER_DATE="2024-03-11T09:00:00+00:00"
bad=$(git log --format=%H --grep='^Speed up cent rounding$' main)
# The later docstring edit (Document rounding mode) touches the neighbouring line, so the
# revert conflicts: keep the new docstring, restore the original quantize() rounding.
git revert --no-edit "$bad" >/dev/null 2>&1 || true
python3 - <<'PY'
import re
p = "shop/pricing.py"
s = open(p).read()
s = re.sub(r"<<<<<<< [^\n]*\n(.*?)=======\n(.*?)>>>>>>> [^\n]*\n",
           lambda m: m.group(1).splitlines(True)[0] + m.group(2).splitlines(True)[1], s, flags=re.S)
open(p, "w").write(s)
PY
git add shop/pricing.py
GIT_EDITOR=true git revert --continue >/dev/null
