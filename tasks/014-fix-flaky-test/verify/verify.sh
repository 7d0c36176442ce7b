#!/usr/bin/env bash
set -u
export PYTHONDONTWRITEBYTECODE=1
python3 - <<'PY'
import json, os, shutil, subprocess, sys, tempfile

W = os.getcwd()
HERE = W  # verify files were copied into the workspace root

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

def suite(workdir, module, reps=1, seed="0", only=()):
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    try:
        p = subprocess.run([sys.executable, os.path.join(HERE, "run_suite.py"), workdir, module, str(reps), *only],
                           capture_output=True, text=True, env=env, timeout=60)
    except subprocess.TimeoutExpired:
        fail(f"running {module} timed out")
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except Exception:
        fail(f"could not run {module}: {(p.stderr.strip().splitlines() or ['no output'])[-1]}")

ORIGINAL = ["test_counts_a_tag_once_per_post", "test_most_used_first", "test_drops_posts_older_than_a_week",
            "test_newest_first", "test_digest"]

if not os.path.isfile("tests/test_digest.py"):
    fail("tests/test_digest.py is missing (the flaky test must be fixed, not deleted)")
if not os.path.isfile("digest.py"):
    fail("digest.py is missing")

# 1. the team's test module: all original tests still there, none skipped
r = suite(W, "tests.test_digest", 1, seed=0)
if r["errors"]:
    fail("tests/test_digest.py does not load: " + r["errors"][0])
missing = [n for n in ORIGINAL if n not in r["names"]]
if missing:
    fail("tests were deleted or renamed in tests/test_digest.py: " + ", ".join(missing))
if r["skipped"]:
    fail("tests are skipped or marked expected-failure (that hides the problem instead of fixing it): " + ", ".join(r["skipped"]))

# 2. documented behaviour of digest.py, under several hash seeds
for seed in (0, 1, 2, 3, 7, 42, 1234, 99991):
    h = suite(W, "test_hidden_digest", 1, seed=seed)
    if h["errors"] or h["failed"]:
        why = h["errors"][0] if h["errors"] else h["first_problem"]
        fail(f"digest.py does not behave as its docstrings say (PYTHONHASHSEED={seed}): {why}")

# 3. the test module must now pass every time
for seed in range(16):
    r = suite(W, "tests.test_digest", 6, seed=seed)
    if r["failed"] or r["errors"] or r["skipped"]:
        why = r["errors"][0] if r["errors"] else (r["first_problem"] or "skipped: " + ", ".join(r["skipped"]))
        fail(f"tests/test_digest.py is still flaky: failed with PYTHONHASHSEED={seed}: {why}")

# 4. the tests must still check the real behaviour: they pass on a correct
#    implementation and each catches the regression it was written for.
tmp = tempfile.mkdtemp()
def with_impl(name):
    d = os.path.join(tmp, name)
    shutil.copytree(os.path.join(W, "tests"), os.path.join(d, "tests"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(HERE, "mutants", name + ".py"), os.path.join(d, "digest.py"))
    return d

ref_dir = with_impl("reference")
for seed in (0, 5, 11):
    r = suite(ref_dir, "tests.test_digest", 3, seed=seed)
    if r["failed"] or r["errors"]:
        fail("tests/test_digest.py fails against a correct implementation of the documented behaviour: "
             + (r["errors"][0] if r["errors"] else r["first_problem"]))

KILLS = [
    ("counts_duplicates", "test_counts_a_tag_once_per_post", "a tag counted twice for one post"),
    ("ties_reverse_alpha", "test_most_used_first", "equally used tags in reverse alphabetical order"),
    ("least_used_first", "test_most_used_first", "tags ordered least used first"),
    ("no_cutoff", "test_drops_posts_older_than_a_week", "posts older than a week kept"),
    ("ties_id_desc", "test_newest_first", "same-time posts ordered by id descending"),
    ("oldest_first", "test_newest_first", "posts returned oldest first"),
    ("oldest_first", "test_digest", "posts returned oldest first"),
    ("ties_reverse_alpha", "test_digest", "equally used tags in reverse alphabetical order"),
]
for mutant, test, bug in KILLS:
    d = os.path.join(tmp, mutant)
    if not os.path.isdir(d):
        with_impl(mutant)
    r = suite(d, "tests.test_digest", 2, seed=3, only=[test])
    if test not in r["failed"]:
        fail(f"{test} no longer asserts the real behaviour: it still passes when digest.py has a bug ({bug}); "
             "make the code deterministic instead of loosening the test")
shutil.rmtree(tmp, ignore_errors=True)
print("PASS")
PY
