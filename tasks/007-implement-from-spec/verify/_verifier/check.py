"""Hidden checks for semver.py, decided here; the workspace's code runs only in a child."""

import os
import sys
import unittest

sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402

W = None


def setUpModule():
    global W
    W = kit.Session("from semver import Version, compare, max_version, parse")


def tearDownModule():
    W.close()


def parsed(text):
    return W.value(f"tuple(parse({text!r}))")


def compare(a, b):
    return W.call("compare", a, b)


def max_version(versions, **options):
    return W.value(f"max_version({versions!r}, **{options!r})")


class Test1Parse(unittest.TestCase):
    def test_plain(self):
        """parse('1.2.3') gives Version(1, 2, 3, (), ())"""
        self.assertEqual(parsed("1.2.3"), (1, 2, 3, (), ()))
        self.assertEqual(parsed("0.0.0"), (0, 0, 0, (), ()))
        self.assertEqual(parsed("10.20.30"), (10, 20, 30, (), ()))

    def test_returns_version(self):
        """parse() returns a Version instance"""
        self.assertTrue(W.value("isinstance(parse('1.2.3'), Version)"))

    def test_v_prefix(self):
        """a single leading 'v' is accepted and ignored"""
        self.assertEqual(parsed("v1.2.3"), (1, 2, 3, (), ()))

    def test_prerelease_types(self):
        """prerelease identifiers: numeric ones become int, others stay str"""
        self.assertEqual(W.value("parse('1.0.0-alpha.1').prerelease"), ("alpha", 1))
        self.assertEqual(W.value("parse('1.0.0-0a.0.x-y').prerelease"), ("0a", 0, "x-y"))
        self.assertEqual(W.value("parse('1.0.0-rc.10').prerelease"), ("rc", 10))
        self.assertEqual(W.value("parse('1.0.0--').prerelease"), ("-",))

    def test_build(self):
        """build identifiers are kept as strings, leading zeros allowed"""
        W.exec("v = parse('1.0.0-beta+exp.sha.5114f85')")
        self.assertEqual(W.value("v.prerelease"), ("beta",))
        self.assertEqual(W.value("v.build"), ("exp", "sha", "5114f85"))
        self.assertEqual(W.value("parse('1.0.0+001').build"), ("001",))
        self.assertEqual(W.value("parse('1.0.0+21AF26D3----117B344092BD').build"),
                         ("21AF26D3----117B344092BD",))

    def test_invalid(self):
        """invalid strings raise ValueError"""
        bad = ["", "1", "1.2", "1.2.3.4", "01.2.3", "1.02.3", "1.2.03", "1.2.3-", "1.2.3+",
               "1.2.3-alpha..1", "1.2.3-alpha.01", "1.2.3-00", "1.2.3+a..b", "1.2.3-alpha_beta",
               " 1.2.3", "1.2.3 ", "1.2.3\n", "V1.2.3", "vv1.2.3", "=1.2.3", "a.b.c", "-1.2.3",
               "1.2.3-+", "1.2.3-é", "١.2.3", "1.2.3+build+x"]
        for text in bad:
            with self.assertRaises(ValueError, msg=f"parse({text!r}) should raise ValueError"):
                W.call("parse", text)

    def test_type_error(self):
        """non-str input raises TypeError"""
        for value in (None, 123, b"1.2.3", (1, 2, 3)):
            with self.assertRaises(TypeError, msg=repr(value)):
                W.call("parse", value)

    def test_large_numbers(self):
        """numbers are not size limited"""
        self.assertEqual(W.value("parse('99999999999999999999.0.1').major"), 99999999999999999999)


class Test2Str(unittest.TestCase):
    def test_canonical(self):
        """str(Version) gives the canonical form without the 'v'"""
        for text in ("1.2.3", "1.2.3-rc.1", "1.2.3+build.7", "1.2.3-rc.1+build.007", "0.0.0-0.a-b"):
            self.assertEqual(W.value(f"str(parse({text!r}))"), text)
        self.assertEqual(W.value("str(parse('v4.5.6-x'))"), "4.5.6-x")
        self.assertEqual(W.value("str(Version(1, 0, 0, ('alpha', 2), ('b',)))"), "1.0.0-alpha.2+b")


class Test3Compare(unittest.TestCase):
    ORDER = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
             "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.10.0", "2.0.0"]

    def test_spec_order(self):
        """the ascending example in SPEC.md holds pairwise"""
        for i, a in enumerate(self.ORDER):
            for j, b in enumerate(self.ORDER):
                expected = (i > j) - (i < j)
                self.assertEqual(compare(a, b), expected, f"compare({a!r}, {b!r})")

    def test_numeric_prerelease(self):
        """numeric prerelease identifiers compare numerically"""
        self.assertEqual(compare("1.0.0-rc.2", "1.0.0-rc.10"), -1)
        self.assertEqual(compare("1.0.0-10", "1.0.0-9"), 1)
        self.assertEqual(compare("1.0.0-alpha.100", "1.0.0-alpha.20"), 1)

    def test_numeric_below_alnum(self):
        """numeric identifiers sort below alphanumeric ones"""
        self.assertEqual(compare("1.0.0-999", "1.0.0-a"), -1)
        self.assertEqual(compare("1.0.0-rc.1", "1.0.0-rc.1a"), -1)
        self.assertEqual(compare("1.0.0-0a", "1.0.0-99"), 1)

    def test_ascii_order(self):
        """alphanumeric identifiers compare in ASCII order"""
        self.assertEqual(compare("1.0.0-RC", "1.0.0-alpha"), -1)
        self.assertEqual(compare("1.0.0-a-b", "1.0.0-a"), 1)

    def test_core_numeric(self):
        """major/minor/patch compare numerically"""
        self.assertEqual(compare("1.9.0", "1.10.0"), -1)
        self.assertEqual(compare("2.0.0", "10.0.0"), -1)
        self.assertEqual(compare("0.0.2", "0.0.10"), -1)
        self.assertEqual(compare("1.0.0-rc.1", "0.9.9"), 1)

    def test_build_ignored(self):
        """build metadata does not affect precedence"""
        self.assertEqual(compare("1.0.0+a", "1.0.0+b"), 0)
        self.assertEqual(compare("1.0.0-rc.1+zzz", "1.0.0-rc.1"), 0)
        self.assertEqual(compare("v1.0.0", "1.0.0+x"), 0)

    def test_version_objects(self):
        """compare accepts Version objects and strings interchangeably"""
        self.assertEqual(W.value("compare(parse('1.2.3'), '1.2.4')"), -1)
        self.assertEqual(W.value("compare(Version(1, 2, 3, (1,)), parse('1.2.3-0'))"), 1)

    def test_invalid_raises(self):
        """compare() raises ValueError for invalid version strings"""
        with self.assertRaises(ValueError):
            compare("1.0", "1.0.0")


class Test4MaxVersion(unittest.TestCase):
    def test_basic(self):
        """max_version picks the highest release"""
        self.assertEqual(max_version(["1.2.0", "1.10.0", "1.9.9"]), "1.10.0")

    def test_skips_prerelease_by_default(self):
        """prereleases are skipped unless include_prerelease=True"""
        versions = ["1.0.0", "2.0.0-rc.1", "1.5.0"]
        self.assertEqual(max_version(versions), "1.5.0")
        self.assertEqual(max_version(versions, include_prerelease=True), "2.0.0-rc.1")
        self.assertIsNone(max_version(["2.0.0-rc.1"]))
        self.assertEqual(max_version(["1.0.0-rc.2", "1.0.0-rc.10"], include_prerelease=True), "1.0.0-rc.10")

    def test_invalid_skipped_and_original_text(self):
        """invalid strings are skipped and the winner is returned exactly as given"""
        self.assertEqual(max_version(["latest", "v3.0.0", "03.1.0", "2.9.9"]), "v3.0.0")
        self.assertIsNone(max_version(["nope", "1.2"]))
        self.assertIsNone(max_version([]))

    def test_ties_first_wins(self):
        """on equal precedence the first string wins"""
        self.assertEqual(max_version(["1.0.0+b", "v1.0.0", "1.0.0+a"]), "1.0.0+b")

    def test_any_iterable(self):
        """max_version accepts any iterable"""
        self.assertEqual(W.value("max_version(v for v in ('0.1.0', '0.2.0'))"), "0.2.0")


if __name__ == "__main__":
    kit.main()
