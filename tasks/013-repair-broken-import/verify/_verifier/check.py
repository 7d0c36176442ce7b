"""Hidden checks for the invoicer package: its CLI output and its imports as a library, compared
here; the package runs only in children."""

import difflib
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402
from verifykit import fail  # noqa: E402

W = os.getcwd()
EXPECTED_MAIN = kit.read_hidden(os.path.join(HERE, "expected_main.txt"))
EXPECTED_HIDDEN = kit.read_hidden(os.path.join(HERE, "expected_hidden.txt"))
ELSEWHERE = tempfile.mkdtemp()


def first_lines_differing(got, want):
    diff = difflib.unified_diff(want.splitlines(), got.splitlines(), "expected", "got", lineterm="", n=0)
    return " / ".join(list(diff)[2:6])


def last_line(text):
    return (text.strip().splitlines() or [""])[-1]


proc = kit.run([sys.executable, "-m", "invoicer", os.path.join(HERE, "main_invoice.json")])
if proc.returncode != 0:
    fail(f"'python3 -m invoicer data/invoice.json' exits with {proc.returncode}: {last_line(proc.stderr)}")
if proc.stdout.rstrip("\n") != EXPECTED_MAIN.rstrip("\n"):
    fail("'python3 -m invoicer data/invoice.json' runs but its output differs from the original program's "
         f"output: {first_lines_differing(proc.stdout, EXPECTED_MAIN)}")

proc = kit.run([sys.executable, "-m", "invoicer", os.path.join(HERE, "hidden_invoice.json"), "--currency", "£"],
               cwd=ELSEWHERE, env={"PYTHONPATH": W})
if proc.returncode != 0:
    fail("the package does not work when run from another directory (PYTHONPATH=<repo> python3 -m invoicer "
         f"...): {last_line(proc.stderr)}")
if proc.stdout.rstrip("\n") != EXPECTED_HIDDEN.rstrip("\n"):
    fail("output for a second invoice (run from another directory, --currency) is not what the original code "
         f"produces: {first_lines_differing(proc.stdout, EXPECTED_HIDDEN)}")

PROBLEM = "importing the package as a library is broken: "
with kit.Session("import sys", cwd=ELSEWHERE, path=[W]) as lib:
    try:
        lib.exec("import invoicer.money\nimport invoicer.totals\n"
                 "t = invoicer.totals.compute_totals([{'unit_price': '10.005', 'qty': 2}], '0.1')")
        if not lib.value("isinstance(t.total, invoicer.money.Money)"):
            fail(PROBLEM + "compute_totals returns a Money class that is not invoicer.money.Money (the module "
                 "was imported twice under different names, e.g. via a sys.path hack)")
        if lib.value("str(t.total.amount)") != "22.02":
            fail(PROBLEM + f"compute_totals(...) total is {lib.value('str(t.total.amount)')}, expected 22.02")
    except kit.Raised as exc:
        fail(PROBLEM + str(exc))

with kit.Session("import sys", cwd=ELSEWHERE, path=[W]) as lib:
    try:
        lib.exec("import invoicer.cli")  # imports everything the CLI needs
        leaked = lib.value("[m for m in ('money', 'totals', 'tabular', 'text_table', 'render', 'cli') "
                           "if m in sys.modules]")
        if leaked:
            fail(PROBLEM + f"package modules were imported as top-level modules (sys.path hack?): {leaked}")
        lib.exec("from invoicer.render import render_invoice")
        if not lib.value("callable(render_invoice)"):
            fail(PROBLEM + "invoicer.render.render_invoice is not callable")
    except kit.Raised as exc:
        fail(PROBLEM + str(exc))
kit.passed()
