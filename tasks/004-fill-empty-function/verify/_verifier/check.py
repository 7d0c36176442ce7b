"""Hidden checks for textutils.py, decided here; the workspace's code runs only in a child."""

import os
import sys
import unittest

sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402

W = None


def setUpModule():
    global W
    W = kit.Session("import doctest\nimport textutils\nfrom textutils import slugify, unique_slug")


def tearDownModule():
    W.close()


class Test1Slugify(unittest.TestCase):
    def check(self, cases):
        for args, expected in cases:
            self.assertEqual(W.call("slugify", *args), expected, f"slugify{args!r}")

    def test_docstring_examples(self):
        """the examples in slugify's docstring must hold"""
        failures = W.value("doctest.testmod(textutils, verbose=False, report=False).failed")
        self.assertEqual(failures, 0, "a docstring example of textutils fails")

    def test_basic(self):
        """simple titles become lowercase hyphenated slugs"""
        self.check([
            (("Hello, World!",), "hello-world"),
            (("Python 3.12 is out",), "python-3-12-is-out"),
            (("already-a-slug",), "already-a-slug"),
            (("--Leading and trailing--",), "leading-and-trailing"),
            (("MiXeD   CaSe\tand\nwhitespace",), "mixed-case-and-whitespace"),
        ])

    def test_accents_and_non_ascii(self):
        """accented letters are folded to ASCII, other non-ASCII characters dropped"""
        self.check([
            (("Crème brûlée",), "creme-brulee"),
            (("Ångström über São Paulo",), "angstrom-uber-sao-paulo"),
            (("I ❤ Python",), "i-python"),
            (("日本語",), ""),
        ])

    def test_underscores_and_punctuation(self):
        """underscores and other punctuation are separators, not word characters"""
        self.check([
            (("snake_case_names explained",), "snake-case-names-explained"),
            (("C'est la vie",), "c-est-la-vie"),
            (("a/b\\c.d",), "a-b-c-d"),
        ])

    def test_empty(self):
        """titles without usable characters give ''"""
        self.check([(("",), ""), (("???",), ""), (("   ",), ""), (("___",), "")])

    def test_truncation_keeps_whole_words(self):
        """long slugs are shortened by dropping whole words, never cutting one"""
        self.check([
            (("The quick brown fox jumps", 15), "the-quick-brown"),
            (("The quick brown fox jumps", 12), "the-quick"),
            (("The quick brown fox jumps", 14), "the-quick"),
            (("The quick brown fox jumps", 25), "the-quick-brown-fox-jumps"),
            (("The quick brown fox jumps", 24), "the-quick-brown-fox"),
            (("The quick brown fox jumps", 3), "the"),
        ])

    def test_first_word_too_long(self):
        """a first word longer than max_length is cut to exactly max_length"""
        self.check([
            (("Supercalifragilistic day", 10), "supercalif"),
            (("Supercalifragilistic", 5), "super"),
        ])

    def test_default_max_length(self):
        """the default max_length is 50"""
        title = " ".join(["word"] * 20)   # 99 characters as a slug
        self.assertEqual(W.call("slugify", title), "-".join(["word"] * 10))


class Test2UniqueSlug(unittest.TestCase):
    def test_unique_slug(self):
        """unique_slug() must keep working on top of slugify()"""
        self.assertEqual(W.call("unique_slug", "Hello World", set()), "hello-world")
        self.assertEqual(W.call("unique_slug", "Hello World", {"hello-world"}), "hello-world-2")
        self.assertEqual(W.call("unique_slug", "Hello World", {"hello-world", "hello-world-2"}),
                         "hello-world-3")
        self.assertEqual(W.value("unique_slug('alpha beta gamma', {'alpha-beta-gamma'}, max_length=16)"),
                         "alpha-beta-2")

    def test_reading_time(self):
        """reading_time() is unchanged"""
        self.assertEqual(W.call("textutils.reading_time", "word " * 401), 3)
        self.assertEqual(W.call("textutils.reading_time", ""), 1)


if __name__ == "__main__":
    kit.main()
