"""Hidden checks for data/customers.json, decided here (no workspace code runs at all)."""

import json
import math
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402

OUTPUT = os.path.join("data", "customers.json")
EXPECTED = json.loads(kit.read_hidden(os.path.join(HERE, "expected_customers.json")))


def show(value):
    return json.dumps(value, ensure_ascii=False)


def describe(value):
    return "null" if value is None else f"{kind(value)} {show(value)}"


def kind(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def first_mismatch(got, want, path="$"):
    """Return a description of the first difference, or None. Numbers compare by value."""
    if kind(got) != kind(want):
        return f"{path}: expected {describe(want)}, got {describe(got)}"
    if isinstance(want, dict):
        missing = [k for k in want if k not in got]
        extra = [k for k in got if k not in want]
        if missing:
            return f"{path}: missing key(s) {missing}"
        if extra:
            return f"{path}: unexpected key(s) {extra}"
        for key in want:
            problem = first_mismatch(got[key], want[key], f"{path}.{key}")
            if problem:
                return problem
        return None
    if isinstance(want, list):
        for index, (g, w) in enumerate(zip(got, want)):
            problem = first_mismatch(g, w, f"{path}[{index}]")
            if problem:
                return problem
        if len(got) != len(want):
            return f"{path}: expected {len(want)} items, got {len(got)}"
        return None
    if kind(want) == "number":
        if not (math.isfinite(got) and math.isclose(got, want, rel_tol=0, abs_tol=1e-9)):
            return f"{path}: expected {show(want)}, got {show(got)}"
        return None
    if got != want:
        return f"{path}: expected {show(want)}, got {show(got)}"
    return None


def with_ids(problem, doc):
    """Make '$.customers[3]...' easier to act on by naming the customer id."""
    m = re.match(r"\$\.customers\[(\d+)\]", problem)
    if m:
        try:
            cid = doc["customers"][int(m.group(1))]["id"]
            return f"{problem} (customer id {cid})"
        except (KeyError, IndexError, TypeError):
            pass
    return problem


class Test1CustomersJson(unittest.TestCase):
    def test_output_matches(self):
        """data/customers.json must match the migration spec exactly (values and JSON types)"""
        if not os.path.isfile(OUTPUT):
            self.fail(f"{OUTPUT} does not exist")
        with open(OUTPUT, "rb") as fh:
            raw = fh.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.fail(f"{OUTPUT} is not valid UTF-8: {exc}")
        try:
            got = json.loads(text.lstrip("\ufeff"))
        except json.JSONDecodeError as exc:
            self.fail(f"{OUTPUT} is not valid JSON: {exc}")
        want = EXPECTED
        problem = first_mismatch(got, want)
        if problem:
            self.fail(with_ids(problem, want))

    def test_csv_kept(self):
        """data/customers.csv must be left in place"""
        self.assertTrue(os.path.isfile(os.path.join("data", "customers.csv")), "data/customers.csv was removed")


if __name__ == "__main__":
    kit.main()
