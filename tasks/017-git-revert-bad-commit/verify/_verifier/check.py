"""Hidden check for the revert: git's view of the repository and the pricing code's behaviour,
compared here; the code runs only in a child."""

import os
import sys

sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402
from verifykit import fail  # noqa: E402

# main as built by setup, oldest first: (tree, author date, subject). Trees do not depend on who ran setup.
ORIGINAL = [
    ("6894086aea155eed8a8a7e1f42a735dd7cb1aa96", "2024-03-01T09:00:00+00:00", "Add pricing module"),
    ("a006bd89e4bde32a16e4b043ccee92e9aeb95955", "2024-03-02T10:30:00+00:00", "Add README and tests"),
    ("217747f90cafafb06defa5619c6d2426971c25cf", "2024-03-04T16:45:00+00:00", "Speed up cent rounding"),
    ("31942235772a06ff4a4a41d089c1459ef17c05d4", "2024-03-05T11:20:00+00:00", "Add percentage discounts"),
    ("e8255a6b33551e4047ab1b5d941869cf874d49e8", "2024-03-06T09:10:00+00:00", "Document rounding mode of to_cents"),
    ("a00380ed0fe38a2d7451982dbfc66818c4f74182", "2024-03-07T14:00:00+00:00", "Add command-line entry point"),
    ("04456a216c8b2a660943e2de917d0bdd3d4584fc", "2024-03-08T17:30:00+00:00", "Release 1.3.0"),
]
BAD = 2  # index of the commit that broke rounding
VERIFY_FILES = ("verify.sh", "_verifier/", "_evalrun/")
DOCSTRING = '"""Round to whole cents, half away from zero (1.005 -> 1.01, -1.005 -> -1.01)."""'


def git(*args, check=True):
    p = kit.run(["git", *args])
    if check and p.returncode != 0:
        fail(f"'git {' '.join(args)}' failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return p.stdout


gitdir = kit.run(["git", "rev-parse", "--git-dir"])
if gitdir.returncode != 0:
    fail("the workspace is no longer a git repository")
gitdir = gitdir.stdout.strip()
for marker, what in (("REVERT_HEAD", "a revert"), ("sequencer", "a revert/cherry-pick sequence"),
                     ("MERGE_HEAD", "a merge"), ("CHERRY_PICK_HEAD", "a cherry-pick"),
                     ("rebase-merge", "a rebase"), ("rebase-apply", "a rebase")):
    if os.path.exists(os.path.join(gitdir, marker)):
        fail(f"{what} is still in progress (.git/{marker} exists); finish it so the result is committed")
if git("symbolic-ref", "-q", "HEAD", check=False).strip() != "refs/heads/main":
    fail("HEAD is not on branch main; the revert should be committed on main")
status = [l for l in git("status", "--porcelain=v1", "--untracked-files=all").splitlines()
          if not any(l[3:].startswith(v) for v in VERIFY_FILES)
          and "__pycache__/" not in l and not l.endswith(".pyc")]
if status:
    fail(f"uncommitted changes left in the working tree/index: {status[:4]}; the fix must be committed")

# 1. history not rewritten: the original commits are still main's first commits, in order
hashes = git("rev-list", "--first-parent", "--reverse", "main").split()
log = [tuple(l.split("|", 2)) for l in
       git("log", "--first-parent", "--reverse", "--format=%T|%ad|%s", "--date=iso-strict", "main").splitlines()]
for i, orig in enumerate(ORIGINAL):
    if i >= len(log) or log[i] != orig:
        fail(f"history was rewritten: original commit #{i + 1} '{orig[2]}' is no longer in main's history "
             "unchanged (amend/rebase/reset?); only add new commits on top")
if len(log) == len(ORIGINAL):
    fail("no new commit on main: the bad commit has not been reverted")
bad_hash = hashes[BAD]
new = hashes[len(ORIGINAL):]

# 2. a real revert commit for the bad commit
def is_revert_of_bad(c):
    msg = git("log", "-1", "--format=%B", c)
    return (bad_hash in msg or bad_hash[:7] in msg) or ("revert" in msg.lower() and ORIGINAL[BAD][2] in msg)

if not any(is_revert_of_bad(c) for c in new):
    subjects = [git("log", "-1", "--format=%s", c).strip() for c in new]
    fail(f"none of the new commits {subjects} is a revert of '{ORIGINAL[BAD][2]}' ({bad_hash[:7]}); "
         "use git revert so the commit records what it reverts")

# 3. nothing but shop/pricing.py changed relative to the original tip
changed = git("diff", "--name-only", hashes[len(ORIGINAL) - 1], "HEAD").split()
other = [f for f in changed if f != "shop/pricing.py"]
if other:
    fail(f"files unrelated to the bad commit changed: {', '.join(other)}; later commits' changes must stay as they are")
if "shop/pricing.py" not in changed:
    fail("shop/pricing.py is unchanged compared to before: the bad rounding change is still there")

# 4. later commits' changes kept, bug gone
src = open("shop/pricing.py", encoding="utf-8").read()
if "<<<<<<<" in src or ">>>>>>>" in src:
    fail("shop/pricing.py still contains conflict markers")
if DOCSTRING not in src:
    fail("the to_cents docstring from the later commit 'Document rounding mode of to_cents' was lost "
         "(conflict resolved by taking the old version?)")
if "def apply_discount" not in src:
    fail("apply_discount from the later commit 'Add percentage discounts' is gone")

# 5. the pricing code works: its answers, computed in a child, compared here
PROBES = [  # (expression, expected, what a wrong value means)
    *[(f"str(to_cents(Decimal({raw!r})))", want,
       f"to_cents({raw}) returned {{got}}, expected {want}: the rounding bug is still there")
      for raw, want in (("1.005", "1.01"), ("1.004", "1.00"), ("-1.005", "-1.01"), ("2.675", "2.68"),
                        ("0.125", "0.13"))],
    ("str(line_total('0.335', 3))", "1.01", "line_total('0.335', 3) = {got}, expected 1.01"),
    ("str(order_total([('0.335', 3), ('4.99', 1)], '0.0725'))", "6.44", "order_total(...) = {got}, expected 6.44"),
    ("str(apply_discount(Decimal('0.99'), 50))", "0.50", "apply_discount(0.99, 50) = {got}, expected 0.50"),
    ("__version__", "1.3.0", "shop.__version__ is no longer 1.3.0 (it is {got})"),
    ("cli_output(['0.335:3', '4.99:1', '--tax', '0.2', '--discount', '10'])", "6.48",
     "python3 -m shop.cli printed {got!r}, expected '6.48'"),
]
SETUP = """
import io
from contextlib import redirect_stdout
from decimal import Decimal
from shop import __version__
from shop.cli import main
from shop.pricing import apply_discount, line_total, order_total, to_cents
def cli_output(argv):
    buf = io.StringIO()
    with redirect_stdout(buf):
        main(argv)
    return buf.getvalue().strip()
"""
with kit.Session() as code:
    try:
        code.exec(SETUP)
        for expr, want, meaning in PROBES:
            got = code.value(expr)
            if got != want:
                fail(meaning.format(got=got))
    except kit.Raised as exc:
        fail(f"the pricing code does not work: {exc}")
kit.passed()
