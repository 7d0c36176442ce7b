"""Hidden check for the partial commit: git's view of the repository, compared here."""

import os
import sys

sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402
from verifykit import fail  # noqa: E402

BRANCH = "feature/sliding-window"
MESSAGE = "Add sliding-window rate limiter"
# main as built by setup: (tree, author date, subject), newest first. Trees do not depend on who ran setup.
MAIN = [
    ("18fc1761704382b1b3c57c33213c7bd6dc2a9736", "2024-02-08T11:15:00+00:00", "Document how to run tests"),
    ("b6528fce6a9cce6a17a3975a886e2236b1b838c8", "2024-02-06T14:30:00+00:00", "Add tests and legacy throttle shim"),
    ("17d350124077e5aec2cffbe5a2d0136560ba6022", "2024-02-05T09:00:00+00:00", "Initial token bucket"),
]
COMMITTED = {  # path -> (status vs main, blob of the work-in-progress version)
    "src/ratelimit.py": ("M", "35becfcaee47f1545ac2090bd3a85e2dcc49a535"),
    "src/sliding_window.py": ("A", "b51bfdf74b5f12bd698e028680e7b696c423b82e"),
    "tests/test_ratelimit.py": ("M", "50ea991087e887b6f5dc770ffbf3877d86fac3d4"),
}
LEFT_ALONE = {  # porcelain status line -> blob that must still be in the working tree (None = deleted)
    " M README.md": ("README.md", "37a37273bd10633c5b4041d311d3c0e39cd3c5d9"),
    " M src/config.py": ("src/config.py", "84b1002ed37a7758238f015dce3a381432f83db2"),
    " D src/legacy_throttle.py": ("src/legacy_throttle.py", None),
    "?? notes/scratch.md": ("notes/scratch.md", "1894c0be74722d164ea7ee04214fbf22bb8f623e"),
}
VERIFY_FILES = ("verify.sh", "_verifier/", "_evalrun/")


def git(*args, check=True):
    p = kit.run(["git", *args])
    if check and p.returncode != 0:
        fail(f"'git {' '.join(args)}' failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return p.stdout


if kit.run(["git", "rev-parse", "--git-dir"]).returncode != 0:
    fail("the workspace is no longer a git repository")
if not git("rev-parse", "-q", "--verify", "refs/heads/main", check=False).strip():
    fail("branch main no longer exists")

# 1. main untouched
log = [tuple(l.split("|", 2)) for l in git("log", "--first-parent", "--format=%T|%ad|%s", "--date=iso-strict", "main").splitlines()]
if log != MAIN:
    if log[-len(MAIN):] == MAIN and len(log) > len(MAIN):
        fail(f"main moved: it has new commit(s) {[s for _, _, s in log[:len(log) - len(MAIN)]]}; commit on {BRANCH} only and leave main where it was")
    fail("main's history was changed (commits rewritten, amended or removed); main must stay exactly as it was")
main = git("rev-parse", "main").strip()

# 2. the branch and its single commit
if not git("rev-parse", "-q", "--verify", f"refs/heads/{BRANCH}", check=False).strip():
    branches = git("branch", "--format=%(refname:short)").split()
    fail(f"branch {BRANCH} does not exist (branches: {', '.join(branches)})")
head_ref = git("symbolic-ref", "-q", "HEAD", check=False).strip()
if head_ref != f"refs/heads/{BRANCH}":
    fail(f"HEAD should be on {BRANCH} after the commit, but it is on {head_ref or 'a detached commit'}")
new = git("rev-list", f"main..{BRANCH}").split()
if not new:
    fail(f"{BRANCH} has no commit of its own yet; commit the three files on it")
if len(new) > 1:
    fail(f"{BRANCH} has {len(new)} commits on top of main; expected a single commit")
if git("rev-parse", f"{BRANCH}^").strip() != main or git("rev-list", "--parents", "-n1", BRANCH).split()[1:] != [main]:
    fail(f"the commit on {BRANCH} is not directly on top of main")
subject = git("log", "-1", "--format=%s", BRANCH).strip()
if subject != MESSAGE:
    fail(f"commit message is {subject!r}, expected {MESSAGE!r}")

# 3. exactly the three files, with their work-in-progress content
diff = {}
for line in git("diff", "--no-renames", "--name-status", "main", BRANCH).splitlines():
    st, path = line.split("\t", 1)
    diff[path] = st
extra = sorted(set(diff) - set(COMMITTED))
if extra:
    fail(f"the commit also contains {', '.join(extra)}; only {', '.join(sorted(COMMITTED))} should be committed")
for path, (st, blob) in COMMITTED.items():
    if path not in diff:
        fail(f"{path} was not committed" + (" (it is a new, untracked file: it has to be added)" if st == "A" else ""))
    got = git("rev-parse", f"{BRANCH}:{path}", check=False).strip()
    if got != blob:
        fail(f"the committed {path} is not the version that was in the working tree")

# 4. nothing staged, everything else still pending exactly as before
staged = git("diff", "--cached", "--name-only").split()
if staged:
    fail(f"changes are staged: {', '.join(staged)}; the remaining changes should be left unstaged")
status = [l for l in git("status", "--porcelain=v1", "--untracked-files=all").splitlines()
          if not any(l[3:].startswith(v) for v in VERIFY_FILES)
          and "__pycache__/" not in l and not l.endswith(".pyc")]
for want, (path, blob) in LEFT_ALONE.items():
    if want not in status:
        kind = "deletion of" if blob is None else ("untracked file" if want.startswith("??") else "modification of")
        fail(f"the pending {kind} {path} is no longer there as an uncommitted change (git status shows "
             f"{[l for l in status if l.endswith(path)] or 'nothing'}); it should have been left as it was")
    if blob is not None and git("hash-object", path).strip() != blob:
        fail(f"the uncommitted content of {path} was changed; it should have been left as it was")
unexpected = [l for l in status if l not in LEFT_ALONE]
if unexpected:
    fail(f"unexpected working-tree changes: {unexpected}")
kit.passed()
