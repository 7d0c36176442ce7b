"""Hidden checks for the flaky-test fix. digest.py's behaviour is compared here under several hash
seeds; the team's tests run (against it and against known-bad mutants) only in children, whose
JSON reports are read here."""

import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402
from verifykit import fail  # noqa: E402

W = os.getcwd()
RUN_SUITE = kit.read_hidden(os.path.join(HERE, "run_suite.py"))
MUTANTS = {name[:-3]: kit.read_hidden(os.path.join(HERE, "mutants", name))
           for name in sorted(os.listdir(os.path.join(HERE, "mutants"))) if name.endswith(".py")}
ORIGINAL = ["test_counts_a_tag_once_per_post", "test_most_used_first", "test_drops_posts_older_than_a_week",
            "test_newest_first", "test_digest"]
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
# The documented behaviour, probed in a child; `p` and NOW build posts there.
PROBE_SETUP = """
import itertools
from datetime import datetime, timedelta
import digest
NOW = datetime(2024, 3, 1, 9, 30)
def p(pid, hours_ago, tags=()):
    return {"id": pid, "title": f"t{pid}", "published": NOW - timedelta(hours=hours_ago), "tags": list(tags)}
def ids(posts):
    return [x["id"] for x in posts]
TIES = ["delta", "alpha", "kilo", "charlie", "bravo", "echo", "foxtrot", "golf"]
"""
CHECKS = [  # (expression evaluated in the child, expected value, what it means)
    ("digest.top_tags([{'tags': ['x', 'x', 'x']}, {'tags': ['y']}, {'tags': ['y', 'x']}, {'tags': ['y']}], n=2)",
     ["y", "x"], "top_tags must count a tag once per post"),
    ("[digest.top_tags([{'tags': [t]} for t in perm], n=3) "
     "for perm in itertools.islice(itertools.permutations(TIES), 0, 5000, 97)]",
     [["alpha", "bravo", "charlie"]] * 52, "top_tags does not order equally used tags alphabetically"),
    ("[digest.top_tags([{'tags': [t]} for t in perm], n=8) "
     "for perm in itertools.islice(itertools.permutations(TIES), 0, 5000, 97)]",
     [sorted(["delta", "alpha", "kilo", "charlie", "bravo", "echo", "foxtrot", "golf"])] * 52,
     "top_tags does not order equally used tags alphabetically"),
    ("digest.top_tags([{'tags': ['zeta', 'mu', 'mu']}, {'tags': ['zeta', 'beta']}, {'tags': ['mu', 'alpha']}, "
     "{'tags': ['omega', 'zeta']}, {'tags': ['beta', 'mu', 'omega']}], n=10)",
     ["mu", "zeta", "beta", "omega", "alpha"], "top_tags must rank by number of posts, then alphabetically"),
    ("[ids(digest.recent_posts(list(perm), NOW)) for perm in itertools.permutations("
     "[p(14, 1), p(3, 1), p(9, 4), p(27, 4), p(5, 4), p(11, 0)])]",
     [[11, 3, 14, 5, 9, 27]] * 720,
     "recent_posts must return newest first and same-time posts by id whatever the input order"),
    ("ids(digest.recent_posts([p(1, 24 * 7), p(2, 24 * 7 + 0.001), p(3, 0), p(4, -1), p(5, 24 * 3)], NOW))",
     [3, 5, 1], "recent_posts window (inclusive bounds, nothing in the future) changed"),
    ("ids(digest.recent_posts([p(1, 24 * 7), p(2, 24 * 7 + 0.001), p(3, 0), p(4, -1), p(5, 24 * 3)], NOW, days=1))",
     [3], "recent_posts ignores the days argument"),
    ("[digest.build_digest(list(perm), NOW, n_tags=2) for perm in itertools.permutations("
     "[p(8, 30, ['b', 'a']), p(2, 30, ['a', 'c']), p(5, 2, ['c', 'b']), p(1, 500, ['z'])])]",
     [{"post_ids": [5, 2, 8], "tags": ["a", "b"]}] * 24, "build_digest returns the wrong digest"),
]


def suite(workdir, module, reps=1, seed=0, only=()):
    """The team's test `module`, run `reps` times in `workdir` in a child; its JSON report."""
    proc = kit.run([sys.executable, "-c", RUN_SUITE, workdir, module, str(reps), *only],
                   env={"PYTHONHASHSEED": str(seed)}, timeout_s=60)
    if proc.timed_out:
        fail(f"running {module} timed out")
    try:
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        if not isinstance(report, dict):
            raise ValueError("not a report")
        return report
    except (ValueError, IndexError):
        fail(f"could not run {module}: {(proc.stderr.strip().splitlines() or ['no output'])[-1]}")


def first_wrong(got, want):
    if isinstance(want, list) and isinstance(got, list) and len(got) == len(want) and len(want) > 3:
        for g, w in zip(got, want):
            if g != w:
                return f"got {g}, expected {w}"
    return None if got == want else f"got {got}, expected {want}"


if not os.path.isfile("tests/test_digest.py"):
    fail("tests/test_digest.py is missing (the flaky test must be fixed, not deleted)")
if not os.path.isfile("digest.py"):
    fail("digest.py is missing")

# 1. the team's test module: all original tests still there, none skipped
r = suite(W, "tests.test_digest", 1, seed=0)
if r.get("errors"):
    fail("tests/test_digest.py does not load: " + str(r["errors"][0]))
missing = [n for n in ORIGINAL if n not in r.get("names", [])]
if missing:
    fail("tests were deleted or renamed in tests/test_digest.py: " + ", ".join(missing))
if r.get("skipped"):
    fail("tests are skipped or marked expected-failure (that hides the problem instead of fixing it): "
         + ", ".join(map(str, r["skipped"])))

# 2. documented behaviour of digest.py, under several hash seeds, compared here
for seed in (0, 1, 2, 3, 7, 42, 1234, 99991):
    with kit.Session(PROBE_SETUP, env={"PYTHONHASHSEED": str(seed)}) as probe:
        for expr, want, meaning in CHECKS:
            result = probe.evaluate(expr)
            problem = (f"{result.error_type}: {result.error}" if not result.ok
                       else first_wrong(result.value, want))
            if problem:
                fail(f"digest.py does not behave as its docstrings say (PYTHONHASHSEED={seed}): "
                     f"{meaning}: {problem}")

# 3. the test module must now pass every time
for seed in range(16):
    r = suite(W, "tests.test_digest", 6, seed=seed)
    if r.get("failed") or r.get("errors") or r.get("skipped"):
        why = (r["errors"][0] if r.get("errors")
               else (r.get("first_problem") or "skipped: " + ", ".join(map(str, r.get("skipped", [])))))
        fail(f"tests/test_digest.py is still flaky: failed with PYTHONHASHSEED={seed}: {why}")

# 4. the tests must still check the real behaviour: they pass on a correct implementation and
#    each catches the regression it was written for.
tmp = tempfile.mkdtemp()


def with_impl(name):
    d = os.path.join(tmp, name)
    if not os.path.isdir(d):
        shutil.copytree(os.path.join(W, "tests"), os.path.join(d, "tests"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        with open(os.path.join(d, "digest.py"), "w", encoding="utf-8") as fh:
            fh.write(MUTANTS[name])
    return d


ref_dir = with_impl("reference")
for seed in (0, 5, 11):
    r = suite(ref_dir, "tests.test_digest", 3, seed=seed)
    if r.get("failed") or r.get("errors"):
        fail("tests/test_digest.py fails against a correct implementation of the documented behaviour: "
             + str(r["errors"][0] if r.get("errors") else r.get("first_problem")))

for mutant, test, bug in KILLS:
    r = suite(with_impl(mutant), "tests.test_digest", 2, seed=3, only=[test])
    if test not in r.get("failed", []):
        fail(f"{test} no longer asserts the real behaviour: it still passes when digest.py has a bug ({bug}); "
             "make the code deterministic instead of loosening the test")
shutil.rmtree(tmp, ignore_errors=True)
kit.passed()
